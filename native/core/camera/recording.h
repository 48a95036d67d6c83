// Recordings on disk: the face-check recording format (written by `face-check record`, played by the
// replay source) and libfreenect's fakenect format (played by libfreenect's own fakenect library through
// the freenect source). Both are folders of plain PPM/PGM frames plus an index file.
//
// face-check recording, version 1 (docs/device.md):
//   <dir>/recording.txt   text, one item per line:
//       face-check-recording 1
//       size <width> <height>
//       intrinsics <fx> <fy> <cx> <cy>
//       frame <timestamp_us> <colour file> <depth file | -> [<infrared file>]
//   colour: binary PPM (P6, maxval 255); depth: binary PGM (P5, maxval 65535, big-endian as PGM
//   specifies), millimetres registered to the colour pixel grid, 0 = no measurement. "-": colour only.
//   infrared (when the camera gave it): binary PGM (P5, maxval 255), active-infrared levels registered to
//   the colour grid, 0 = none there.
//
// fakenect (libfreenect/fakenect/record.c): <dir>/INDEX.txt lists r-<time>-<timestamp>.ppm (640x480 RGB,
// one-line header) and d-<time>-<timestamp>.pgm (640x480 11-bit Kinect disparity, native byte order,
// one-line header) in capture order; <time> is seconds, which fakenect replays in real time.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "core/camera/camera.h"

namespace facecheck {

enum class RecordingFormat { FaceCheck, Fakenect };

class RecordingWriter {
 public:
  ~RecordingWriter();
  // Creates `dir` (its parent must exist) and refuses a folder that already holds a recording.
  Result open(const std::string& dir, RecordingFormat format);
  Result write(const CameraFrame& frame);
  Result close();
  uint64_t frames() const { return frames_; }

 private:
  std::string dir_;
  RecordingFormat format_ = RecordingFormat::FaceCheck;
  FILE* index_ = nullptr;
  uint64_t frames_ = 0;
  int64_t firstUs_ = -1;
  int width_ = 0, height_ = 0;
};

struct RecordingIndex {
  int width = 0, height = 0;
  CameraIntrinsics intrinsics;
  struct Entry {
    int64_t timestampUs;
    std::string colour, depth;  // paths; depth empty: colour only
    std::string infrared;       // path; empty: none
  };
  std::vector<Entry> frames;
  bool hasDepth = false;
};

Result readRecordingIndex(const std::string& dir, RecordingIndex* out);
Result readFrameFiles(const RecordingIndex& index, size_t i, CameraFrame* frame);

// Kinect v1 11-bit disparity <-> millimetres (the OpenKinect calibration used by libfreenect's examples).
uint16_t kinectRawToMm(uint16_t raw);
uint16_t kinectMmToRaw(uint16_t mm);

// Binary PNM files.
Result writePpm(const std::string& path, const uint8_t* rgb, int width, int height);
Result writePgm16(const std::string& path, const uint16_t* values, int width, int height, bool bigEndian);
Result readPpm(const std::string& path, std::vector<uint8_t>* rgb, int* width, int* height);
Result readPgm16(const std::string& path, std::vector<uint16_t>* values, int* width, int* height);
Result writePgm8(const std::string& path, const uint8_t* values, int width, int height);
Result readPgm8(const std::string& path, std::vector<uint8_t>* values, int* width, int* height);

}  // namespace facecheck
