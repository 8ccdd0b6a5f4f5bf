"""Azure OpenAI endpoints. Both forms are base URLs like any other:

- the v1 path: `https://R.openai.azure.com/openai/v1` (model = the deployment name);
- classic deployment URLs: `https://R.openai.azure.com/openai/deployments/D?api-version=V`,
  where `api-version` stays in the query of every request and the deployment `D` is the
  model's name unless `--model` names another.

Azure hosts take the key in an `api-key` header, not `Authorization: Bearer`."""

from __future__ import annotations

import re

import httpx

#: Hosts of Azure OpenAI and Azure AI Foundry resources.
AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
AZURE_KEY_HEADER = "api-key"
_DEPLOYMENT_PATH = re.compile(r"/openai/deployments/([^/]+)/?$")


def is_azure_host(host: str) -> bool:
    return host.lower().rstrip(".").endswith(AZURE_HOST_SUFFIXES)


def classic_deployment(url: httpx.URL) -> str | None:
    """The deployment name of a classic Azure deployment URL, else None."""
    match = _DEPLOYMENT_PATH.search(url.path)
    return match.group(1) if match else None


def takes_api_key_header(url: httpx.URL) -> bool:
    """Whether the endpoint wants the key in `api-key`: an Azure host, or a classic
    deployment path (Azure API Management fronts those under hosts of its own)."""
    return is_azure_host(url.host) or classic_deployment(url) is not None
