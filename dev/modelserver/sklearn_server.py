"""A scikit-learn model server on KServe's Python SDK (the `kserve` package from PyPI), built into
an image by `dev/build-image.sh modelserver` and run by the ClusterServingRuntime the e2e
inference test installs.

    python sklearn_server.py --model_name NAME --model_dir /mnt/models [--http_port 8080 ...]

It loads the one `*.joblib` estimator in --model_dir (where KServe mounts a `pvc://` storageUri)
and serves it with `kserve.ModelServer`: KServe's v1 protocol (`POST /v1/models/NAME:predict`
with `{"instances": [...]}` answers `{"predictions": [...]}`), v2 and the health endpoints. The
answer is whatever the estimator predicts: nothing here knows the model.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

import joblib
import kserve
from kserve import model_server
from kserve.errors import InvalidInput

log = logging.getLogger("sklearn_server")


class SKLearnModel(kserve.Model):  # type: ignore[misc]  # kserve ships no type information
    def __init__(self, name: str, model_dir: Path) -> None:
        super().__init__(name)
        self.model_dir = model_dir
        self.estimator: Any = None

    def load(self) -> bool:
        found = sorted(self.model_dir.glob("*.joblib"))
        if len(found) != 1:
            raise RuntimeError(f"expected exactly one *.joblib in {self.model_dir}, found {[p.name for p in found]}")
        self.estimator = joblib.load(found[0])
        log.info("loaded %s from %s", type(self.estimator).__name__, found[0])
        self.ready = True
        return True

    def predict(
        self, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None, response_headers: Any = None
    ) -> dict[str, Any]:
        # The SDK decodes a body sent as application/json; anything else arrives as bytes.
        body = json.loads(payload) if isinstance(payload, bytes) else payload
        instances = body.get("instances") if isinstance(body, dict) else None
        if not isinstance(instances, list) or not instances:
            raise InvalidInput('expected {"instances": [[feature, ...], ...]}')
        return {"predictions": self.estimator.predict(instances).tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(parents=[model_server.parser])
    parser.add_argument("--model_dir", required=True, type=Path, help="directory holding the *.joblib estimator")
    args, _ = parser.parse_known_args()
    model = SKLearnModel(args.model_name, args.model_dir)
    model.load()
    kserve.ModelServer().start([model])


if __name__ == "__main__":
    main()
