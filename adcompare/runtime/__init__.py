"""What runs beside the op set without being part of its mathematics: cost
counting (``cost``), the cache of large result buffers (``buffers``) and the
hooks a recorder installs in dispatch (``hooks``)."""
