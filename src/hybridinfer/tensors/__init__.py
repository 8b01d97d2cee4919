"""Tensors as the Open Inference Protocol carries them: JSON data and the binary extension."""
