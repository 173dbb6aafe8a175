"""The generation model configs compose, point `eval` at what `generate` writes, and build valid endpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from prism_fast.generate.client import THINKING_STYLES, ChatEndpoint, request_body
from prism_fast.pipeline.options import endpoint_from_mapping
from tests.generate.conftest import compose_cfg

PROVIDERS = ("openai", "anthropic", "gemini", "deepseek", "qwen", "kimi", "glm")


@pytest.mark.parametrize("name", PROVIDERS)
def test_provider_config_is_evaluable_after_generate(name):
    cfg = compose_cfg([f"model={name}", "runs_root=/r", "lang=en"])
    assert cfg.model.name == name and cfg.model.kind == "responses"
    # `eval model=<name>` reads the JSONL that `generate model=<name>` writes into the same run directory
    assert Path(cfg.model.predictions) == Path("/r") / f"{name}-sample-en-reference" / "generate" / "responses.jsonl"
    ep = endpoint_from_mapping(OmegaConf.to_container(cfg.model, resolve=True),
                               OmegaConf.to_container(cfg.generate, resolve=True))
    assert ep.base_url.startswith("https://") and ep.api_key_env and ep.api_key_env.endswith("_KEY")
    assert ep.temperature == 0.7 and ep.max_tokens == 8192 and ep.thinking_style in THINKING_STYLES
    body = request_body(ChatEndpoint(**{**ep.__dict__, "thinking": True}), [], ep.temperature, ep.max_tokens)
    assert body["model"] == ep.model_id


def test_local_needs_a_model_id_and_existing_models_still_compose():
    cfg = compose_cfg(["model=local"])
    with pytest.raises(SystemExit, match="model_id"):
        endpoint_from_mapping(OmegaConf.to_container(cfg.model, resolve=True), {})
    cfg = compose_cfg(["model=local", "model.endpoint.model_id=Qwen/Qwen3-8B", "generate.max_tokens=123"])
    ep = endpoint_from_mapping(OmegaConf.to_container(cfg.model, resolve=True),
                               OmegaConf.to_container(cfg.generate, resolve=True))
    assert (ep.base_url, ep.model_id, ep.api_key_env, ep.max_tokens) == (
        "http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B", None, 123)
    for name, kind in (("reference", "reference"), ("fixture", "responses")):
        assert compose_cfg([f"model={name}"]).model.kind == kind
    with pytest.raises(SystemExit, match="no `endpoint`"):
        endpoint_from_mapping(OmegaConf.to_container(compose_cfg(["model=reference"]).model), {})
