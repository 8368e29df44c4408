"""The store's flows written once for every backend, over the small protocol of `backend`."""
