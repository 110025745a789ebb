"""rocketq.client.consumer."""
