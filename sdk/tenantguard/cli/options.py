"""One table of the option groups several commands share: TLS towards the plane, NATS credentials.

Why: the nine NATS credential/TLS options were declared in full by ``plane serve`` and
``sidecar serve``, and the three plane TLS options by every command that talks to the plane;
a help text fixed in one copy stayed wrong in the others. Here each group is a typed value
(:class:`PlaneTls`, :class:`NatsOptions`) whose options are declared once. A command takes
the group as one parameter and :func:`option_groups` spreads it into the options the user
types, in the parameter's place, then hands the command the typed value::

    @app.command()
    @option_groups
    def write(..., tls: PlaneTlsOptions) -> None:
        client = PlaneClient(..., **tls.client_args())

Environment variables are ``<prefix><OPTION NAME>``: ``TG_PLANE_CA`` for the CLI's commands,
``TG_SIDECAR_PLANE_CA`` and ``TG_PLANE_NATS_USER`` for the services (:class:`Group` sets the
prefix). ``--nats`` itself stays with each command: it is required by one and optional by
the other, with different help.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypedDict, TypeVar

import typer

from tenantguard.feed.natsconn import HELP as NATS_HELP
from tenantguard.util.httptls import CLIENT_HELP as TLS_HELP
from tenantguard.util.httptls import ClientTls

if TYPE_CHECKING:
    from tenantguard.feed.natsconn import NatsConnection

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option of a group: the field it fills, its flag, its type and its help."""

    field: str
    flag: str
    annotation: Any
    help: str
    is_file: bool = True

    @property
    def param_name(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def declared(self, env_prefix: str) -> Any:
        """``Annotated[type, typer.Option(...)]`` with the env var ``<prefix><FLAG>``."""
        env = env_prefix + self.flag.removeprefix("--").replace("-", "_").upper()
        if self.is_file:
            return Annotated[self.annotation, typer.Option(self.flag, envvar=env, help=self.help, dir_okay=False)]
        return Annotated[self.annotation, typer.Option(self.flag, envvar=env, help=self.help)]


@dataclass(frozen=True, slots=True)
class Group:
    """Marks a parameter as an option group: ``Annotated[PlaneTls, Group(env="TG_SIDECAR_")]``."""

    env: str


class PlaneTlsArgs(TypedDict):
    """The ``PlaneClient`` keyword arguments of the plane TLS options."""

    ca: Path | None
    client_cert: Path | None
    client_key: Path | None


@dataclass(frozen=True, slots=True)
class PlaneTls:
    """``--plane-ca``, ``--plane-client-cert``, ``--plane-client-key``: HTTPS towards the plane."""

    ca: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None

    OPTIONS: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("ca", "--plane-ca", Path | None, TLS_HELP["ca"]),
        OptionSpec("client_cert", "--plane-client-cert", Path | None, TLS_HELP["cert"]),
        OptionSpec("client_key", "--plane-client-key", Path | None, TLS_HELP["key"]),
    )

    def client_args(self) -> PlaneTlsArgs:
        """As ``PlaneClient``'s ``ca``/``client_cert``/``client_key`` keywords."""
        return {"ca": self.ca, "client_cert": self.client_cert, "client_key": self.client_key}

    def client_tls(self) -> ClientTls:
        """As the services' :class:`ClientTls` (the sidecar's registration with the plane)."""
        return ClientTls(ca_file=self.ca, cert_file=self.client_cert, key_file=self.client_key)


@dataclass(frozen=True, slots=True)
class NatsOptions:
    """The NATS credentials and TLS options beside ``--nats`` (the servers)."""

    user: str | None = None
    password_file: Path | None = None
    token_file: Path | None = None
    nkey_seed_file: Path | None = None
    creds_file: Path | None = None
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_server_name: str | None = None

    OPTIONS: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("user", "--nats-user", str | None, NATS_HELP["user"], is_file=False),
        OptionSpec("password_file", "--nats-password-file", Path | None, NATS_HELP["password_file"]),
        OptionSpec("token_file", "--nats-token-file", Path | None, NATS_HELP["token_file"]),
        OptionSpec("nkey_seed_file", "--nats-nkey-seed-file", Path | None, NATS_HELP["nkey_seed_file"]),
        OptionSpec("creds_file", "--nats-creds-file", Path | None, NATS_HELP["creds_file"]),
        OptionSpec("tls_ca", "--nats-tls-ca", Path | None, NATS_HELP["tls_ca"]),
        OptionSpec("tls_cert", "--nats-tls-cert", Path | None, NATS_HELP["tls_cert"]),
        OptionSpec("tls_key", "--nats-tls-key", Path | None, NATS_HELP["tls_key"]),
        OptionSpec("tls_server_name", "--nats-tls-server-name", str | None, NATS_HELP["tls_server_name"],
                   is_file=False),
    )

    def any_given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))

    def connection(self, servers: str) -> NatsConnection:
        """The :class:`NatsConnection` to ``servers`` (``--nats``) with these credentials."""
        from tenantguard.feed.natsconn import from_options

        return from_options(servers, user=self.user, password_file=self.password_file, token_file=self.token_file,
                            nkey_seed_file=self.nkey_seed_file, creds_file=self.creds_file, tls_ca=self.tls_ca,
                            tls_cert=self.tls_cert, tls_key=self.tls_key, tls_server_name=self.tls_server_name)


GROUPS: tuple[type[PlaneTls] | type[NatsOptions], ...] = (PlaneTls, NatsOptions)

# The CLI's own commands read TG_PLANE_CA etc. (as dev.env exports them).
PlaneTlsOptions = Annotated[PlaneTls, Group(env="TG_")]
NO_PLANE_TLS = PlaneTls()  # the defaults a command states in its signature (the decorator fills in the real ones)
NO_NATS_OPTIONS = NatsOptions()


def _group_of(annotation: Any) -> tuple[type[PlaneTls] | type[NatsOptions], Group] | None:
    if typing.get_origin(annotation) is not Annotated:
        return None
    base, *extras = typing.get_args(annotation)
    marker = next((e for e in extras if isinstance(e, Group)), None)
    if marker is None:
        return None
    if base not in GROUPS:
        raise TypeError(f"Group() marks {base!r}, which is no option group ({', '.join(g.__name__ for g in GROUPS)})")
    return base, marker


def option_groups(func: F) -> F:
    """Spread each option-group parameter of ``func`` into its options (in its place) for Typer,
    and call ``func`` with the typed group. Put it below ``@app.command()``."""
    signature = inspect.signature(func, eval_str=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type[PlaneTls] | type[NatsOptions], tuple[tuple[str, str], ...]]] = {}
    for param in signature.parameters.values():
        found = _group_of(param.annotation)
        if found is None:
            params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        cls, marker = found
        groups[param.name] = (cls, tuple((o.field, o.param_name) for o in cls.OPTIONS))
        params.extend(inspect.Parameter(o.param_name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=o.declared(marker.env)) for o in cls.OPTIONS)
    if not groups:
        raise TypeError(f"{func.__name__} takes no option group")
    names = [p.name for p in params]
    if len(names) != len(set(names)):
        raise TypeError(f"{func.__name__}: an option group's option clashes with a parameter")

    @functools.wraps(func)
    def command(**kwargs: Any) -> Any:
        for name, (cls, fields) in groups.items():
            kwargs[name] = cls(**{field: kwargs.pop(param) for field, param in fields})
        return func(**kwargs)

    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": signature.return_annotation}
    return typing.cast(F, command)
