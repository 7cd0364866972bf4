"""What the store's writers run once a write is closed (``answers``). The command line itself is spectune/."""
