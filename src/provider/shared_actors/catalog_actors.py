"""The model catalog and the LoRA catalog as shared actors.

The chart renders both catalogs into a mounted ConfigMap (files) and, for the LoRA catalog, also
into `LORA_ADAPTER_CATALOG` (the upstream provider's variable). A file wins over the variable. The
actors re-read their file every few seconds; kubelet swaps a mounted ConfigMap's content on change,
so a `helm upgrade` that edits a catalog reaches running Instances without a restart. When a
catalog changes, the Instances that use it are woken and revalidated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from actors import KubeObject, SharedActor, SharedActors, SharedContext, Wake
from provider.model.catalog import (
    LORA_CATALOG_ENV,
    MODEL_CATALOG_ENV,
    CatalogError,
    CatalogModel,
    Catalogs,
    LoraAdapter,
    parse_lora_catalog,
    parse_model_catalog,
)

log = structlog.get_logger(__name__)

MODEL_CATALOG_FILE_ENV = "MODEL_CATALOG_FILE"
LORA_CATALOG_FILE_ENV = "LORA_ADAPTER_CATALOG_FILE"


def _uses_llm(obj: KubeObject) -> bool:
    return ((obj.get("spec") or {}).get("topology") or {}).get("type") == "llm"


def _uses_lora_catalog(obj: KubeObject) -> bool:
    if not _uses_llm(obj):
        return False
    params = (((obj.get("spec") or {}).get("components") or {}).get("llmEngine") or {}).get("parameters") or {}
    return any(str(params.get(f"loraSlot{i}") or "").strip() for i in (1, 2, 3))


class _CatalogActor(SharedActor):
    """Holds one catalog as an immutable tuple (`entries`); re-reads its file on a poll and wakes
    its users when the entries changed."""

    poll_seconds = 5.0
    uses: Callable[[KubeObject], bool] = staticmethod(_uses_llm)

    def __init__(self, file: str | None, inline: str) -> None:
        self._file = Path(file) if file else None
        self._inline = inline
        self._text: str | None = None
        self.entries: tuple[Any, ...] = ()
        self._load()

    def parse(self, text: str) -> tuple[Any, ...]:
        raise NotImplementedError

    def _source_text(self) -> str:
        if self._file is not None:
            try:
                return self._file.read_text()
            except OSError as err:
                log.warning("catalog file unreadable, keeping the last one", file=str(self._file), error=str(err))
                return self._text if self._text is not None else ""
        return self._inline

    def _load(self) -> bool:
        """Re-read the source; True when the entries changed."""
        text = self._source_text()
        if text == self._text:
            return False
        self._text = text
        try:
            entries = self.parse(text)
        except CatalogError as err:
            # Keep serving the last good catalog: a typo in a helm upgrade must not break Instances.
            log.error("invalid catalog, keeping the last good one", actor=self.name, error=str(err))
            return False
        changed = entries != self.entries
        self.entries = entries
        return changed

    def reload(self, wake: Wake) -> int:
        """Re-read the source; wake (and count) the Instances that use the catalog if it changed."""
        if not self._load():
            return 0
        woken = wake(type(self).uses)
        log.info("catalog changed, revalidating its Instances", actor=self.name, instances=woken)
        return woken

    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # loaded at construction
        if self._file is None:
            return
        while True:
            await anyio.sleep(self.poll_seconds)
            self.reload(ctx.wake)


class ModelCatalogActor(_CatalogActor):
    name = "model-catalog"
    uses = staticmethod(_uses_llm)

    def parse(self, text: str) -> tuple[CatalogModel, ...]:
        return parse_model_catalog(text)


class LoraCatalogActor(_CatalogActor):
    name = "lora-catalog"
    uses = staticmethod(_uses_lora_catalog)

    def parse(self, text: str) -> tuple[LoraAdapter, ...]:
        return parse_lora_catalog(text)


def register_catalogs(shared: SharedActors, environ: Mapping[str, str]) -> Callable[[], Catalogs]:
    """Register both catalog actors; returns the snapshot reader KServeProvider calls per reconcile."""
    models = ModelCatalogActor(environ.get(MODEL_CATALOG_FILE_ENV), environ.get(MODEL_CATALOG_ENV, ""))
    adapters = LoraCatalogActor(environ.get(LORA_CATALOG_FILE_ENV), environ.get(LORA_CATALOG_ENV, ""))
    shared.register(models)
    shared.register(adapters)
    return lambda: Catalogs(models=models.entries, lora_adapters=adapters.entries)
