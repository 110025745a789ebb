"""rocketq.remoting."""
