"""What is recorded while the model runs (windowed series, histograms)."""
