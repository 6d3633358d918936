"""Settings: precedence, validation, clamping, warnings that name the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memlane.config import SPECS, Settings, env_var, load_settings
from memlane.errors import ConfigError


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_defaults_match_specs() -> None:
    settings = Settings()
    for key, spec in SPECS.items():
        default = tuple(spec.default) if isinstance(spec.default, list) else spec.default
        assert settings.get(key) == default, key


def test_precedence_flags_env_file_defaults(tmp_path: Path) -> None:
    write_config(tmp_path, "recall_limit = 4\nscope = 'all'\n[worker]\nport = 40000\n")
    env = {"MEMLANE_HOME": str(tmp_path), "MEMLANE_SCOPE": "project"}
    settings, warnings = load_settings(environ=env, overrides={"worker.port": 41000})
    assert warnings == []
    assert settings.recall_limit == 4
    assert settings.scope == "project"
    assert settings.worker__port == 41000
    assert settings.context_token_budget == 2000


def test_unknown_key_and_bad_values_warn_and_fall_back(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        "recal_limit = 4\nscope = 'galaxy'\ncontext_token_budget = 'lots'\n"
        "[maintenance]\nmax_age_days = -5\n",
    )
    settings, warnings = load_settings(environ={"MEMLANE_HOME": str(tmp_path)})
    joined = "\n".join(warnings)
    assert "'recal_limit'" in joined
    assert "scope" in joined
    assert "context_token_budget" in joined
    assert "maintenance.max_age_days" in joined
    assert all("\n" not in warning for warning in warnings)
    assert settings.scope == "tiered"
    assert settings.context_token_budget == 2000
    assert settings.maintenance__max_age_days == 90  # the default: never clamped to 1 day


def test_retired_key_is_accepted_ignored_and_named(tmp_path: Path) -> None:
    write_config(tmp_path, "recall_limit = 4\n[worker]\nrecall_timeout_ms = 300\n")
    env = {"MEMLANE_HOME": str(tmp_path), "MEMLANE_WORKER_RECALL_TIMEOUT_MS": "300"}
    settings, warnings = load_settings(environ=env, overrides={"worker.recall_timeout_ms": 300})
    assert settings.recall_limit == 4
    assert not hasattr(settings, "worker__recall_timeout_ms")
    assert len(warnings) == 3  # the file, the environment, the override: one line each
    for warning, where in zip(
        warnings,
        (str(tmp_path / "config.toml"), "env MEMLANE_WORKER_RECALL_TIMEOUT_MS", "override"),
        strict=True,
    ):
        assert "worker.recall_timeout_ms" in warning and where in warning
        assert "no longer used" in warning and "\n" not in warning


def test_broken_toml_is_refused_never_replaced_by_defaults(tmp_path: Path) -> None:
    # Defaults in its place undid the user's settings: maintenance pruned with 90 days.
    write_config(tmp_path, "this is = = not toml")
    for strict in (False, True):
        with pytest.raises(ConfigError, match=r"cannot read .*; fix the file"):
            load_settings(environ={"MEMLANE_HOME": str(tmp_path)}, strict=strict)


def test_env_var_names_and_bool_parsing(tmp_path: Path) -> None:
    assert env_var("worker.autostart") == "MEMLANE_WORKER_AUTOSTART"
    env = {
        "MEMLANE_HOME": str(tmp_path),
        "MEMLANE_WORKER_AUTOSTART": "no",
        "MEMLANE_EXCLUDE_PROJECTS": "/tmp/*, ~/scratch/*",
    }
    settings, warnings = load_settings(environ=env)
    assert not warnings
    assert settings.worker__autostart is False
    assert settings.exclude_projects == ("/tmp/*", "~/scratch/*")


def test_memlane_home_moves_everything(tmp_path: Path) -> None:
    settings, _ = load_settings(environ={"MEMLANE_HOME": str(tmp_path)})
    paths = settings.paths
    assert paths.db_path == tmp_path / "memlane.db"
    assert paths.config_path == tmp_path / "config.toml"
    assert paths.log_dir.parent == tmp_path
    assert paths.runtime_dir.parent == tmp_path


def test_xdg_defaults(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    settings, _ = load_settings(environ=env)
    assert settings.paths.db_path == tmp_path / "data" / "memlane" / "memlane.db"
    assert settings.paths.config_path == tmp_path / "cfg" / "memlane" / "config.toml"


def test_database_display_hides_passwords() -> None:
    from memlane.config import display_target

    url = "postgresql://team:s3cret@db.internal:5432/memlane?sslmode=require&password=x"
    shown = display_target(url)
    assert "s3cret" not in shown
    assert "password" not in shown
    assert shown == "postgresql://team@db.internal:5432/memlane"
    assert display_target("/home/me/memlane.db") == "/home/me/memlane.db"


def test_a_named_config_file_replaces_config_toml(tmp_path: Path) -> None:
    write_config(tmp_path, "recall_limit = 2\n")
    named = tmp_path / "elsewhere.toml"
    named.write_text("recall_limit = 6\ncontext_token_budget = 'lots'\n", encoding="utf-8")
    env = {"MEMLANE_HOME": str(tmp_path), "MEMLANE_CONFIG": str(named)}
    settings, warnings = load_settings(environ=env)
    assert settings.recall_limit == 6 and settings.paths.config_path == named
    assert warnings == [
        f"config: bad value 'lots' for context_token_budget in {named} (expected a whole"
        " number); using default 2000"
    ]
    flagged, _ = load_settings(environ=env, config_path=tmp_path / "config.toml")
    assert flagged.recall_limit == 2  # the flag wins over MEMLANE_CONFIG
    gone = tmp_path / "gone.toml"
    # The user named a file and expects its settings: never defaults in its place.
    with pytest.raises(ConfigError, match=f"no config file at {re.escape(str(gone))}"):
        load_settings(environ={**env, "MEMLANE_CONFIG": str(gone)})
    folder = tmp_path / "configs"
    folder.mkdir()  # a folder is no config file (its read failed as "[Errno 21] …: 3")
    with pytest.raises(ConfigError, match=f"no config file at {re.escape(str(folder))}"):
        load_settings(environ=env, config_path=folder)
    (tmp_path / "config.toml").unlink()
    settings, warnings = load_settings(environ={"MEMLANE_HOME": str(tmp_path)})
    assert settings.recall_limit == 3 and warnings == []  # no config.toml: no config


def test_a_config_nested_too_deep_is_refused_not_a_traceback(tmp_path: Path) -> None:
    # tomllib reads nested arrays recursively: 500 levels raised RecursionError in every
    # command and every hook.
    write_config(tmp_path, "a = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigError, match=r"\(nested too deep\); fix the file"):
        load_settings(environ={"MEMLANE_HOME": str(tmp_path)})


def test_a_bad_value_from_the_environment_is_not_repeated_whole(tmp_path: Path) -> None:
    # Python's "invalid literal for int() with base 10: '…'" repeated a secret put in
    # the wrong variable, on every command.
    token = "ghp_FzTOGODgSs0zd1AVfMvEt5unEn5ackVMNGCZ"
    env = {"MEMLANE_HOME": str(tmp_path), "MEMLANE_RECALL_LIMIT": token}
    _, warnings = load_settings(environ=env)
    assert len(warnings) == 1 and "expected a whole number" in warnings[0]
    assert token[4:] not in warnings[0]


NUMERIC = [key for key, spec in SPECS.items() if spec.minimum is not None]


@pytest.mark.parametrize("key", NUMERIC)
def test_every_number_out_of_range_is_refused_never_clamped(tmp_path: Path, key: str) -> None:
    # maintenance.max_age_days = 0 was clamped to 1 day and max_db_size_mb = 0 to 5 MB,
    # each key's most destructive value: automatic maintenance then deleted memories.
    spec = SPECS[key]
    assert spec.maximum is not None
    below, above = spec.minimum - 1, spec.maximum + 1
    section, _, leaf = key.rpartition(".")
    for value in (below, above):
        text = f"{leaf} = {value!r}\n"
        write_config(tmp_path, f"[{section}]\n{text}" if section else text)
        for env in ({}, {env_var(key): str(value)}):
            environ = {"MEMLANE_HOME": str(tmp_path), **env}
            settings, warnings = load_settings(environ=environ)
            assert settings.get(key) == spec.default, (key, value)
            assert [w for w in warnings if key in w and "is outside" in w], warnings
            assert all(f"using default {spec.default!r}" in w for w in warnings)
            with pytest.raises(ConfigError, match=f"{key}=.*is outside.*config set"):
                load_settings(environ=environ, strict=True)
    inside = spec.maximum if isinstance(spec.default, int) else spec.minimum
    write_config(tmp_path, "")
    env = {"MEMLANE_HOME": str(tmp_path), env_var(key): str(inside)}
    assert load_settings(environ=env, strict=True)[0].get(key) == inside
