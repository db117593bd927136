"""Storage backends behind one protocol (``base.Store``); ``factory.open_store`` picks one."""
