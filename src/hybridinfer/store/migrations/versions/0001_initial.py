"""Initial schema: keys, nodes, requests (with traces) and decisions.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("hash", sa.String(300), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("zone", sa.String(16), nullable=False),
        sa.Column("url", sa.String(500), nullable=False),
        sa.Column("registration", sa.Text, nullable=False),
        sa.Column("registered_at", sa.Float, nullable=False),
    )
    op.create_table(
        "requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("task", sa.String(200), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("total_ms", sa.Float, nullable=False),
        sa.Column("trace", sa.Text, nullable=False),
    )
    op.create_index("ix_requests_request_id", "requests", ["request_id"])
    op.create_index("ix_requests_created_at", "requests", ["created_at"])
    op.create_index("ix_requests_status_created_at", "requests", ["status", "created_at"])
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("subtask_id", sa.String(128), nullable=False),
        sa.Column("deployment", sa.String(300), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("policy_version", sa.String(100), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_index("ix_decisions_request_id", "decisions", ["request_id"])


def downgrade() -> None:
    op.drop_table("decisions")
    op.drop_table("requests")
    op.drop_table("nodes")
    op.drop_table("api_keys")
