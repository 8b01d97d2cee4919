"""The opt-in retained prompt sample a staged router is replayed on.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retained_prompts",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("subtask_id", sa.String(200), nullable=False),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_index("ix_retained_prompts_request", "retained_prompts", ["request_id"])
    op.create_index("ix_retained_prompts_at", "retained_prompts", ["at"])


def downgrade() -> None:
    op.drop_table("retained_prompts")
