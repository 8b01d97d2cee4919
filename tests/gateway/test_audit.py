from __future__ import annotations

from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from tests.conftest import auth


def test_admins_read_the_audit_log_newest_first(client: TestClient, plane: ControlPlane) -> None:
    client.portal.call(plane.audit.record, "key-a", "rules.replace", "v1")  # type: ignore[union-attr]
    client.portal.call(plane.audit.record, "key-b", "policy.apply", "p9")  # type: ignore[union-attr]

    everything = client.get("/v1/audit", headers=auth())
    policies = client.get("/v1/audit?action=policy.apply&limit=1", headers=auth())

    assert everything.status_code == 200
    actions = [entry["action"] for entry in everything.json()["entries"]]
    assert actions.index("policy.apply") < actions.index("rules.replace")
    assert [entry["target"] for entry in policies.json()["entries"]] == ["p9"]


def test_the_audit_log_is_refused_without_the_admin_scope(
    client: TestClient, plane: ControlPlane
) -> None:
    infer_key = client.portal.call(plane.keys.create, "app", {"infer"})  # type: ignore[union-attr]

    refused = client.get("/v1/audit", headers=auth(infer_key))
    assert refused.status_code == 403
    # "¹" is a digit to str.isdigit() and not to int(): a 400 all the same, never a 500.
    for limit in ("0", "¹", "x"):
        bad_limit = client.get(f"/v1/audit?limit={limit}", headers=auth())
        assert bad_limit.status_code == 400, limit
        assert bad_limit.json()["error"]["code"] == "invalid_input"
