from runtime_context.settings import NAMESPACES, RESERVED_NAMESPACES, SETTINGS, child_namespaces, settings_in

REQUIRED = [
    "model.path",
    "http.host",
    "http.port",
    "http.api_key",
    "schedule.max_running_requests",
    "schedule.chunked_prefill_size",
    "memory.kv_cache_tokens",
    "memory.page_size",
    "parallel.dp_size",
    "parallel.load_balance",
    "exec.threads",
    "encoder.model",
    "weight_cache.enabled",
    "observability.log_level",
    "observability.metrics",
    "roles.enforcement",
    "launcher.startup_timeout_s",
    "launcher.shutdown_timeout_s",
]


def test_every_setting_is_declared_once_with_a_docstring_and_a_valid_default():
    for key in REQUIRED:
        assert key in SETTINGS
    for setting in SETTINGS.values():
        assert setting.doc.strip(), setting.key
        assert setting.namespace in NAMESPACES
        assert setting.check(setting.default) == setting.default


def test_every_namespace_has_settings_unless_reserved_and_nesting_is_known():
    for namespace in NAMESPACES:
        assert bool(settings_in(namespace)) != (namespace in RESERVED_NAMESPACES), namespace
    assert child_namespaces("exec") == ["exec.moe"]
    assert SETTINGS["http.api_key"].secret
