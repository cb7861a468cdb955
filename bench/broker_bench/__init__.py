"""The parts of ``bench/broker.py``, one module per section of its output.

A package so that each section can be read on its own, and so that the broker process and
the raw wire connection are not the benchmark's own: they are ``tests/helpers``'
``BrokerProcess``, ``EtcdProcess`` and ``Wire``, which the integration tests use, so a
change in how a broker is started or spoken to is made (and tested) once. Run it as
``python bench/broker.py``; its docstring has the options.

- ``common``: the table and figure formatting, the raw connection.
- ``client_rows``: the client rows and the sizes, importable by an older checkout's
  interpreter (``bench/before_after.py``).
- ``context``: the ``Setup`` every section reads, and the broker under test.
- ``produce``, ``small_batches``, ``consume``, ``lookups``, ``scrape``, ``replication``:
  the sections.
- ``redis_server``: the Redis the figures are compared with.
"""
