"""`serve`: run the server, or inspect and validate configuration. Config errors exit 2 before anything starts."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from launcher.constraints import LAUNCHER_CONSTRAINTS
from launcher.derivations import LAUNCHER_RULES
from launcher.live_inspect import LiveInspectError, fetch_live_entries
from launcher.model_commands import add_model_commands, run_model_command
from launcher.preloaded_parent import start_preloading
from launcher.role_facts import offline_facts
from launcher.role_list import LAUNCHER, ROLES
from launcher.settings_help import settings_reference
from roles.startup_phases import StartupPhases
from runtime_context import EXIT_CONFIG_ERROR, ConfigError, ResolvedConfig, get_http, publish, resolve
from runtime_context.audit import audit, render_audit
from runtime_context.cli_env_sources import SHORT_FLAGS
from runtime_context.inspect_report import (
    offline_entry,
    render_json,
    render_resolved_table,
    render_table,
    resolved_json,
)
from runtime_context.setting import ENV_PREFIX


def _config_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("configuration")
    # SUPPRESS: an option given before the subcommand is not reset by the subcommand's own copy.
    group.add_argument(
        "--config", metavar="PATH", default=argparse.SUPPRESS, help="YAML config file, nested by namespace"
    )
    group.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=argparse.SUPPRESS,
        metavar="NS.KEY=VALUE",
        help="override one setting (repeatable; highest precedence)",
    )
    for flag, key in SHORT_FLAGS.items():
        group.add_argument(
            flag, dest=_dest(flag), metavar="VALUE", default=argparse.SUPPRESS, help=f"sets {key}"
        )
    return parent


def build_parser() -> argparse.ArgumentParser:
    common = _config_options()
    epilog = settings_reference()
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="serve",
        description="Serve an LLM with role-projected configuration (no subcommand: start the server).",
        parents=[common],
        epilog=epilog,
        formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="{config,roles,cache,model}")

    config = commands.add_parser("config", help="show or validate the resolved configuration")
    config_commands = config.add_subparsers(dest="action", metavar="{show,validate}", required=True)
    show = config_commands.add_parser(
        "show",
        parents=[common],
        help="every resolved leaf with its value and source",
        epilog=epilog,
        formatter_class=formatter,
    )
    show.add_argument("--format", choices=("table", "json"), default="table")
    config_commands.add_parser(
        "validate",
        parents=[common],
        help="exit 0, or 2 listing every problem",
        epilog=epilog,
        formatter_class=formatter,
    )

    roles = commands.add_parser("roles", help="what each role sees")
    roles_commands = roles.add_subparsers(dest="action", metavar="{list,inspect,audit}", required=True)
    roles_commands.add_parser(
        "list", help="the roles a server runs: projection and what each does (markdown)"
    )
    inspect = roles_commands.add_parser(
        "inspect",
        parents=[common],
        help="per role: projection and each visible leaf with its source",
        epilog=epilog,
        formatter_class=formatter,
    )
    inspect.add_argument("--role", choices=ROLES.names(), help="only this role")
    inspect.add_argument("--format", choices=("table", "json"), default="table")
    inspect.add_argument("--url", help="ask a running server (e.g. http://127.0.0.1:30000) what it published")
    audit = roles_commands.add_parser(
        "audit",
        parents=[common],
        help="namespaces each running role read vs its projection (record mode)",
        epilog=epilog,
        formatter_class=formatter,
    )
    audit.add_argument("--url", required=True, help="the running server, e.g. http://127.0.0.1:30000")
    audit.add_argument("--format", choices=("table", "json"), default="table")
    cache = commands.add_parser("cache", help="the persistent weight cache (weight_cache.persist: true)")
    cache_commands = cache.add_subparsers(dest="action", metavar="{ls,drop}", required=True)
    cache_commands.add_parser("ls", help="list cached models and their shared memory")
    drop = cache_commands.add_parser("drop", help="free cached entries (all when no KEY is given)")
    drop.add_argument("key", nargs="?", help="an entry key (or its prefix) from `serve cache ls`")
    drop.add_argument("--stop", action="store_true", help="also stop the daemon")
    add_model_commands(commands)
    return parser


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def resolve_from_args(args: argparse.Namespace) -> ResolvedConfig:
    flags = {flag: getattr(args, _dest(flag), None) for flag in SHORT_FLAGS}
    return resolve(
        getattr(args, "config", None),
        sets=getattr(args, "sets", []),
        flags=flags,
        rules=LAUNCHER_RULES,
        constraints=LAUNCHER_CONSTRAINTS,
    )


def main(argv: Sequence[str] | None = None) -> int:
    startup = StartupPhases()
    args = build_parser().parse_args(argv)
    if args.command is None:  # the server: its heavy roles' imports start now, beside resolving the config
        start_preloading()
    startup.mark("read the command line")
    if args.command == "roles" and args.action == "list":  # the declarations alone, no configuration
        sys.stdout.write(ROLES.markdown_table())
        return 0
    if args.command == "cache":  # works on the running daemon, not on a configuration
        from launcher.cache_commands import cache_drop, cache_ls

        return cache_ls() if args.action == "ls" else cache_drop(args.key, args.stop)
    if args.command == "model":  # writes model files; no configuration
        return run_model_command(args)
    try:
        resolved = resolve_from_args(args)
    except ConfigError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_CONFIG_ERROR
    startup.mark("resolve the config")
    if args.command == "config":
        if args.action == "validate":
            print(f"configuration is valid (fingerprint {resolved.fingerprint})")
        elif args.format == "json":
            print(resolved_json(resolved))
        else:
            sys.stdout.write(render_resolved_table(resolved))
        return 0
    if args.command == "roles":
        return _roles(args, resolved)
    from launcher.supervisor import run_server

    # Children never re-resolve: the environment's config is already in the record, and a secret left there
    # would reach every role, projected or not.
    for name in [name for name in os.environ if name.startswith(ENV_PREFIX)]:
        del os.environ[name]
    return run_server(resolved, startup)


def _roles(args: argparse.Namespace, resolved: ResolvedConfig) -> int:
    url = getattr(args, "url", None)
    if url:
        publish(
            resolved, role="launcher", projection=LAUNCHER.projection
        )  # this CLI process reads http.api_key through its bags too
        try:
            entries = fetch_live_entries(url, get_http().api_key)
        except LiveInspectError as error:
            print(f"serve roles {args.action}: {error}", file=sys.stderr)
            return 1
    else:
        entries = [
            offline_entry(resolved, role.name, role.projection, offline_facts(resolved, role.name))
            for role in ROLES
        ]
    if args.action == "audit":
        rows = audit(entries)
        sys.stdout.write(json.dumps(rows, indent=2) + "\n" if args.format == "json" else render_audit(rows))
        return 0
    if args.role:
        entries = [entry for entry in entries if entry.get("role") == args.role]
    sys.stdout.write(render_json(entries) + "\n" if args.format == "json" else render_table(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
