"""The broker's network side: asyncio connections, request handlers, group commit, lifecycle.

``serve(config, *, shutdown_trigger=None)`` runs a broker until the trigger (by default
SIGTERM/SIGINT) fires. Handlers are plain functions from (broker state, request) to a response
body, testable without sockets; only ``connection.py`` and ``listener.py`` know about asyncio
transports.
"""

from .listener import serve
from .clock import BrokerClock
from .state import Broker

__all__ = ["Broker", "BrokerClock", "serve"]
