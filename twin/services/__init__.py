"""Twin services, one module per concern: creation from a plan (``creation``), saving each change
and pushing it to viewers (``persistence``), running and controlling a twin (``controls``), real
events in (``ingestion``), events out (``exports``) and the driver loop (``driver``). The API, the
driver and the tests all come through here."""
