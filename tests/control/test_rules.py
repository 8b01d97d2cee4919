"""``RuleService``: the running table's summary, and an audited hot reload that keeps the
running table when the new one does not validate."""

from __future__ import annotations

import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.rules import RuleService
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.errors import InvalidRules
from hybridinfer.store.sql import SqlStore

ONE_TASK = """\
version: 7
tasks:
  sentiment:
    description: Only sentiment.
    inputs:
      text: {type: string, max_length: 100}
    subtasks:
      - id: classify
        capability: text-classification
        task: sentiment
        inputs: {text: $inputs.text}
    outputs:
      label: $classify.label
"""


@pytest.fixture
def rules(store: SqlStore) -> RuleService:
    return RuleService(Decomposer(load_rules(default_rules_path())), AuditLog(store))


def test_describe_names_each_task_with_its_description(rules: RuleService) -> None:
    described = rules.describe()
    assert described["version"] == 1
    assert described["tasks"]["sentiment"].startswith("Sentiment of a short English text")
    assert list(described["tasks"]) == sorted(described["tasks"])


async def test_replace_runs_the_new_table_and_audits_both_versions(
    rules: RuleService, store: SqlStore
) -> None:
    assert await rules.replace(ONE_TASK, "admin-1") == {"version": 7, "tasks": ["sentiment"]}

    assert rules.describe() == {"version": 7, "tasks": {"sentiment": "Only sentiment."}}
    [entry] = await AuditLog(store).list()
    assert (entry["actor"], entry["action"], entry["target"]) == ("admin-1", "rules.replace", "7")
    assert (entry["before"], entry["after"]) == (1, 7)


async def test_an_invalid_table_changes_nothing(rules: RuleService, store: SqlStore) -> None:
    with pytest.raises(InvalidRules):
        await rules.replace("version: 2\ntasks: {}\n", "admin-1")
    assert rules.describe()["version"] == 1
    assert await AuditLog(store).list() == []
