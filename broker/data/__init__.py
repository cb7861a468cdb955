"""The data service: Produce, Fetch and ListOffsets for both front doors.

``requests.py`` holds the typed requests and results, ``service.py`` the ``DataService`` that
serves them, ``error_codes.py`` which wire code answers which failure. Each port's adapter
(``server/data_handlers.py``, ``server/kafka/data_apis.py``) translates its own bodies into
these once; the request gate (``security/request_gate.py``, ``GatedData``) judges them.
"""
