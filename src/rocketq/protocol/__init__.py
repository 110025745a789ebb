"""rocketq.protocol."""
