"""rocketq.broker.store."""
