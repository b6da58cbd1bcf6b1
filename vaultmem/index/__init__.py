"""The index as a view of the vault: reconcile, watch, and the read-side questions about it."""
