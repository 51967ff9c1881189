"""When each pending job will start: the queue as it stands, replayed forward (replay/)."""
