"""Per-key rate limits and budgets; key rotation (expiry and successor).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("rate_limit_per_minute", sa.Integer, nullable=True))
        batch.add_column(sa.Column("budget", sa.Float, nullable=True))
        batch.add_column(sa.Column("expires_at", sa.Float, nullable=True))
        batch.add_column(sa.Column("replaced_by", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        for name in ("replaced_by", "expires_at", "budget", "rate_limit_per_minute"):
            batch.drop_column(name)
