"""Policy canaries (the share of traffic a canary version serves) and model rollouts.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("policies") as batch:
        batch.add_column(sa.Column("canary_percent", sa.Float, nullable=True))
    op.create_table(
        "model_rollouts",
        sa.Column("id", sa.String(300), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("comparison", sa.Text, nullable=False),
        sa.Column("decided_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("model_rollouts")
    with op.batch_alter_table("policies") as batch:
        batch.drop_column("canary_percent")
