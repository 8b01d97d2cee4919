"""Signal snapshots for what-if replay; leases and guarded canary walks.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signal_snapshots",
        sa.Column("ref", sa.String(64), primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_signal_snapshots_at", "signal_snapshots", ["at"])
    op.create_table(
        "leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_table(
        "policy_walks",
        sa.Column("version", sa.String(100), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("step_started_at", sa.Float, nullable=False),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("policy_walks")
    op.drop_table("leases")
    op.drop_index("ix_signal_snapshots_at", "signal_snapshots")
    op.drop_table("signal_snapshots")
