"""What starts, feeds and listens to A3C's workers: on this machine (forked processes) or on Ray machines."""
