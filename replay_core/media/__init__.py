"""Media: screenshots and other images tied to steps, their thumbnails, and videos of runs.

Owns checking an image before it is kept (type, size, that it decodes), storing it once per
content hash through the Store, thumbnails made once, and rendering a run (or two aligned
runs) as frames for MP4/WebM/GIF. Imports the ground floor and `storage` only: the video export
reads a run's steps and screenshots from the Store, and a pair of runs comes with its alignment
(seq pairs from compare) made by the caller. Pillow is imported here only; imageio-ffmpeg only
when a video is written.
"""
