"""What travels over NATS: connections, subject and stream names, the signed event envelope,
heartbeats, history reads, the nats-server configuration the project writes."""
