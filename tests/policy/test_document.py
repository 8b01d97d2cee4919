"""The policy document: the shipped one compiles; invalid YAML, schema and CEL errors name
their lines."""

from __future__ import annotations

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.policy.document import compile_policy, default_policy_path, load_policy


def test_shipped_policy_is_valid() -> None:
    shipped = load_policy(default_policy_path())
    names = [rule.rule.name for rule in shipped.rules]
    assert names[0] == "sensitive-stays-private"
    assert len(names) == 5


def test_invalid_yaml_schema_and_cel_errors_name_their_lines() -> None:
    with pytest.raises(ConfigError, match=r"p.yaml:3: rules.0.action"):
        compile_policy("version: x\nrules:\n  - {name: a, when: 'true', action: moon}\n", "p.yaml")
    with pytest.raises(ConfigError, match=r"p.yaml:5: rules.1.when \(b\): .*undeclared"):
        compile_policy(
            "version: x\nrules:\n  - {name: a, when: 'true', action: local}\n"
            "  - name: b\n    when: nodes.local.load > 1\n    action: cloud\n",
            "p.yaml",
        )
    with pytest.raises(ConfigError, match="must be boolean"):
        compile_policy(
            "version: x\nrules:\n  - {name: a, when: 'subtask.size + 1', action: local}\n"
        )
    with pytest.raises(ConfigError, match="fails on the documented signals"):
        compile_policy(
            "version: x\nrules:\n  - {name: a, when: 'node.gpu.load > 1.0', action: local}\n"
        )
    with pytest.raises(ConfigError, match="exactly one of"):
        compile_policy(
            "version: x\ncascade: {sentiment: {threshold: 0.5, target_cloud_share: 0.2}}\n"
        )
