"""Write the OpenAPI documents of the sidecar and the plane to docs/api/.

Run: python docs/gen_openapi.py [--check]. The apps are assembled (not started) from
throwaway keys, so the documents describe exactly the routes the code serves; a test
fails when the committed files are stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

API_DIR = Path(__file__).resolve().parent / "api"


def sidecar_openapi() -> dict[str, Any]:
    from authz_sidecar.app import create_api
    from authz_sidecar.config import SidecarConfig
    from authz_sidecar.runtime import Sidecar

    app = create_api(Sidecar(SidecarConfig(service="example")))
    app.title = "tenantguard sidecar"
    return app.openapi()


def plane_openapi() -> dict[str, Any]:
    from tenantguard.identity.keys import SigningKey

    from policy_plane.app import create_app
    from policy_plane.config import PlaneConfig
    from policy_plane.runtime import Plane
    from policy_plane.secrets import HashedSecret, SecretChecker

    config = PlaneConfig(nats_url="nats://127.0.0.1:4222", event_key=SigningKey.generate(),
                         bundle_key=SigningKey.generate(), admin=SecretChecker(HashedSecret.of("x" * 32)))
    return create_app(Plane(config)).openapi()


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def documents() -> dict[str, str]:
    return {"sidecar-openapi.json": render(sidecar_openapi()), "plane-openapi.json": render(plane_openapi())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api/ is out of date")
    ns = parser.parse_args()
    stale = []
    for name, text in documents().items():
        path = API_DIR / name
        if ns.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            API_DIR.mkdir(exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)}; run python docs/gen_openapi.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
