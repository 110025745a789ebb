"""rocketq.broker.processors."""
