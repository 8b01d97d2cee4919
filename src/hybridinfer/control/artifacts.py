"""The artifact use case behind ``GET /v1/artifacts/{name}``: a model's versions, each with
short-lived signed URLs, so nodes pull models without ever holding store credentials."""

from __future__ import annotations

from typing import Any

from hybridinfer.models.store import ModelStore


class ArtifactService:
    """Offers model versions from the model store to nodes."""

    def __init__(self, models: ModelStore, url_ttl_s: int) -> None:
        """``url_ttl_s``: how long a signed URL works (the ``artifact_url_ttl_s`` setting)."""
        self._models = models
        self._url_ttl_s = url_ttl_s

    async def offers(self, name: str) -> list[dict[str, Any]]:
        """``[{"manifest", "model_url", "card_url", "card"}]``, oldest version first."""
        offers = await self._models.offer(name, self._url_ttl_s)
        return [offer.model_dump(mode="json") for offer in offers]
