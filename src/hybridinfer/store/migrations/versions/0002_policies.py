"""Policy versions.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "policies",
        sa.Column("version", sa.String(100), primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("thresholds", sa.Text, nullable=False),
        sa.Column("author", sa.String(64), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("activated_at", sa.Float, nullable=True),
    )
    op.create_index("ix_policies_status", "policies", ["status"])


def downgrade() -> None:
    op.drop_table("policies")
