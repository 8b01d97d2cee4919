"""Turn a request into a plan, using the rule table; check the request's inputs on the way."""

from __future__ import annotations

import math
from typing import Any

from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.decompose.inputs import STRUCTURED_TYPES, check_structured
from hybridinfer.decompose.privacy import exposures, label_privacy, scan_inputs
from hybridinfer.decompose.rules import InputSpec, RuleTable, TaskRule, parse_rules
from hybridinfer.errors import ConfigError, InvalidInput, InvalidRules, UnknownTask
from hybridinfer.privacy.detect import Detector, default_detector


def check_input(name: str, spec: InputSpec, value: Any) -> int:
    """Raise InvalidInput unless ``value`` fits ``spec``; return its size (chars or numbers)."""
    if spec.type in STRUCTURED_TYPES:
        return check_structured(name, spec, value)
    if spec.type == "string":
        if not isinstance(value, str):
            raise InvalidInput(f"inputs.{name} must be a string")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise InvalidInput(f"inputs.{name} is longer than {spec.max_length} characters")
        return len(value)
    if not isinstance(value, list) or not all(
        isinstance(item, int | float) and not isinstance(item, bool) for item in value
    ):
        raise InvalidInput(f"inputs.{name} must be a list of numbers")
    if spec.length is not None and len(value) != spec.length:
        raise InvalidInput(f"inputs.{name} must hold exactly {spec.length} numbers")
    for item in value:
        if not math.isfinite(item):
            raise InvalidInput(f"inputs.{name} holds a number that is not finite")
        if (spec.minimum is not None and item < spec.minimum) or (
            spec.maximum is not None and item > spec.maximum
        ):
            raise InvalidInput(
                f"inputs.{name} values must lie between {spec.minimum} and {spec.maximum}"
            )
    return len(value)


class Decomposer:
    """Plans requests from a rule table; swap the table with ``replace_rules`` to hot-reload."""

    def __init__(self, rules: RuleTable, detector: Detector | None = None) -> None:
        self._detector = detector or default_detector()
        self.replace_rules(rules)

    @property
    def rules(self) -> RuleTable:
        return self._rules

    def replace_rules(self, rules: RuleTable) -> None:
        """Swap in an already validated table (requests in flight keep their plans)."""
        # Which request inputs each step sees is a property of the table: worked out here,
        # once, not on every request.
        self._exposures = {task: exposures(rule) for task, rule in rules.tasks.items()}
        self._rules = rules

    def reload(self, text: str, source: str = "rules.yaml") -> RuleTable:
        """Validate ``text`` and make it the running table; on error raise InvalidRules (with
        the line of each problem) and keep the running one."""
        try:
            rules = parse_rules(text, source)
        except ConfigError as error:
            raise InvalidRules(error.message) from None
        self.replace_rules(rules)
        return rules

    def timeout_ms(self, task: str) -> int | None:
        """The task's own deadline ceiling, if its rule sets one (LLM chat needs longer)."""
        rule = self._rules.tasks.get(task)
        return None if rule is None else rule.timeout_ms

    def task_names(self) -> list[str]:
        return sorted(self._rules.tasks)

    def plan(
        self,
        task: str,
        inputs: dict[str, Any],
        privacy: Privacy | None,
        detector: Detector | None = None,
        fail_closed: bool = True,
    ) -> Plan:
        """The plan for one request; raises UnknownTask or InvalidInput. ``detector`` (the
        policy's phone regions) replaces the decomposer's own for this request."""
        rule = self._rules.tasks.get(task)
        if rule is None:
            raise UnknownTask(f"unknown task {task!r}; known tasks: {', '.join(self.task_names())}")
        size = self._check_inputs(rule, inputs)
        requested = privacy or Privacy.INTERNAL
        scan = scan_inputs(inputs, requested, detector or self._detector, fail_closed)
        raw = self._exposures[task]
        labels = label_privacy(rule, raw, scan, requested)
        subtasks = [
            Subtask(
                id=step.id,
                capability=step.capability,
                task=step.task,
                inputs=dict(step.inputs),
                depends_on=tuple(step.depends_on),
                privacy=labels[step.id],
                size=size,
                complexity=step.complexity,
                soft=step.soft,
                latency_sensitive=step.latency_sensitive,
                stays_local=step.stays_local,
                raw_inputs=raw[step.id],
            )
            for step in rule.subtasks
        ]
        plan = Plan(task=task, subtasks=subtasks, outputs=dict(rule.outputs))
        plan.privacy = scan.describe()
        return plan

    @staticmethod
    def _check_inputs(rule: TaskRule, inputs: dict[str, Any]) -> int:
        unknown = set(inputs) - set(rule.inputs)
        if unknown:
            raise InvalidInput(f"unknown inputs: {', '.join(sorted(unknown))}")
        size = 0
        for name, spec in rule.inputs.items():
            if name not in inputs:
                if spec.required:
                    raise InvalidInput(f"inputs.{name} is required")
                continue
            size += check_input(name, spec, inputs[name])
        return size
