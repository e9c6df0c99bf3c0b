"""Where the API server is and how to authenticate: kubernetes-asyncio's kubeconfig and in-cluster
loaders (token refresh, exec plugins, OIDC included), without its generated API and model classes
(`actors.client.lean_import`, installed before the loaders are imported).
"""

from __future__ import annotations

import os
import ssl
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from actors.client.lean_import import use_lean_kubernetes_asyncio

if TYPE_CHECKING:
    from kubernetes_asyncio.client.configuration import Configuration

# kubernetes-asyncio without its ~770 model classes, for every process that uses this client: before
# anything imports the library (a no-op when something did already).
use_lean_kubernetes_asyncio()

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


async def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Configuration:
    """In-cluster config when running in a pod and no kubeconfig is given, else the kubeconfig."""
    from kubernetes_asyncio.client.configuration import Configuration
    from kubernetes_asyncio.config import kube_config
    from kubernetes_asyncio.config.incluster_config import load_incluster_config

    configuration = Configuration()
    if kubeconfig is None and in_cluster():
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await kube_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    return configuration


def ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """TLS as the kubeconfig or in-cluster config describes it."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def proxy_for(configuration: Configuration) -> str | None:
    """The kubeconfig's proxy-url, else the environment's proxy for the API server, else none."""
    if configuration.proxy:
        return str(configuration.proxy)
    host = urllib.parse.urlsplit(str(configuration.host)).hostname or ""
    if urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get("https") or proxies.get("http")


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and SERVICE_ACCOUNT_TOKEN.exists()
