"""The control loop around one OInK step per tick: state tracking, goal following, command guard."""
