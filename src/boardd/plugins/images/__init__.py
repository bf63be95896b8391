"""The images and audio plugins: blob sequences of images and clips."""
