"""The learner's outcomes and resets; explicit feedback per request.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "learner_outcomes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("capability", sa.String(200), nullable=False),
        sa.Column("arm", sa.String(300), nullable=False),
        sa.Column("context", sa.Text, nullable=False),
        sa.Column("propensity", sa.Float, nullable=False),
        sa.Column("candidates", sa.Text, nullable=False),
        sa.Column("public", sa.Integer, nullable=False),
        sa.Column("quality", sa.Float, nullable=False),
        sa.Column("latency", sa.Float, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("prefer", sa.String(16), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("subtask_id", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_learner_outcomes_request_id", "learner_outcomes", ["request_id"])
    op.create_index("ix_learner_outcomes_capability_id", "learner_outcomes", ["capability", "id"])
    op.create_table(
        "learner_resets",
        sa.Column("capability", sa.String(200), primary_key=True),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("after_id", sa.Integer, nullable=False),
    )
    op.create_table(
        "feedback",
        sa.Column("request_id", sa.String(128), primary_key=True),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("quality", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("learner_resets")
    op.drop_index("ix_learner_outcomes_capability_id", "learner_outcomes")
    op.drop_index("ix_learner_outcomes_request_id", "learner_outcomes")
    op.drop_table("learner_outcomes")
