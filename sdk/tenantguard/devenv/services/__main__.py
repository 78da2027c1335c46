"""``python -m tenantguard.devenv.services NAME ...``: run one demo service on a free port."""

from __future__ import annotations

import argparse

from tenantguard.devenv.services.common import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tenantguard.devenv.services")
    parser.add_argument("service", choices=["edge", "orders", "billing"])
    parser.add_argument("--sidecar", required=True, help="this service's sidecar, e.g. http://127.0.0.1:8181")
    parser.add_argument("--next", help="the service this one calls (edge: orders, orders: billing)")
    parser.add_argument("--pg-dsn", help="billing: PostgreSQL to read invoices from")
    parser.add_argument("--pg-schema")
    parser.add_argument("--pg-role", help="billing: the non-superuser role the queries run as (RLS applies)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.service == "edge":
        from tenantguard.devenv.services.edge import build_app

        serve(build_app(args.sidecar, args.next), port=args.port)
    elif args.service == "orders":
        from tenantguard.devenv.services.orders import build_app as build_orders

        serve(build_orders(args.sidecar, args.next), port=args.port)
    else:
        from tenantguard.devenv.services.billing import Database
        from tenantguard.devenv.services.billing import build_app as build_billing

        serve(build_billing(args.sidecar, Database(args.pg_dsn, args.pg_schema, args.pg_role)), port=args.port)


if __name__ == "__main__":
    main()
