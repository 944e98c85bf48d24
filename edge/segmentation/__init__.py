"""Stream segmentation into multimodal events (pure: no I/O). Built by the daemon issue."""
