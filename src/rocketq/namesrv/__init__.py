"""rocketq.namesrv."""
