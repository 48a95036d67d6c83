#include "core/camera/recording.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace facecheck {

int64_t steadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

Result ioError(const std::string& what, const std::string& path) {
  return Result::fail(Status::Internal, what + " " + path + ": " + std::strerror(errno));
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Reads the header tokens of a binary PNM file (magic, width, height, maxval), skipping comments, and
// leaves the stream at the first pixel byte.
bool readPnmHeader(std::ifstream& in, std::string* magic, int* w, int* h, int* maxval) {
  auto token = [&in]() {
    std::string t;
    int c;
    while ((c = in.get()) != EOF) {
      if (c == '#') {
        while ((c = in.get()) != EOF && c != '\n') {}
        continue;
      }
      if (std::isspace(c)) {
        if (!t.empty()) break;
        continue;
      }
      t.push_back(static_cast<char>(c));
    }
    return t;
  };
  *magic = token();
  try {
    *w = std::stoi(token());
    *h = std::stoi(token());
    *maxval = std::stoi(token());
  } catch (...) {
    return false;
  }
  return *w > 0 && *h > 0 && *w <= 16384 && *h <= 16384;
}

}  // namespace

// ---- Kinect disparity ---------------------------------------------------------------------------------

uint16_t kinectRawToMm(uint16_t raw) {
  if (raw >= 2047) return 0;
  double denom = raw * -0.0030711016 + 3.3309495161;
  if (denom <= 0) return 0;
  double mm = 1000.0 / denom;
  return mm > 0 && mm < 10000 ? static_cast<uint16_t>(std::lround(mm)) : 0;
}

uint16_t kinectMmToRaw(uint16_t mm) {
  if (mm == 0) return 2047;
  double raw = (1000.0 / mm - 3.3309495161) / -0.0030711016;
  if (raw < 0 || raw >= 2047) return 2047;
  return static_cast<uint16_t>(std::lround(raw));
}

// ---- PNM ----------------------------------------------------------------------------------------------

namespace {

// A binary PNM file of 8-bit samples: header, then the bytes as they are.
Result writeRawPnm(const std::string& path, const char* magic, const uint8_t* bytes, int width, int height, int channels) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return ioError("cannot write", path);
  std::fprintf(f, "%s %d %d 255\n", magic, width, height);
  size_t n = static_cast<size_t>(width) * height * channels;
  bool ok = std::fwrite(bytes, 1, n, f) == n;
  ok = std::fclose(f) == 0 && ok;
  return ok ? Result{} : ioError("cannot write", path);
}

Result readRawPnm(const std::string& path, const char* magic, int channels, std::vector<uint8_t>* bytes, int* width, int* height) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError("cannot read", path);
  std::string found;
  int maxval = 0;
  if (!readPnmHeader(in, &found, width, height, &maxval) || found != magic || maxval != 255)
    return Result::fail(Status::Internal, path + ": not a binary 8-bit " + (channels == 3 ? "PPM (P6" : "PGM (P5") + ", maxval 255)");
  bytes->resize(static_cast<size_t>(*width) * *height * channels);
  in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
  if (static_cast<size_t>(in.gcount()) != bytes->size()) return Result::fail(Status::Internal, path + ": truncated " + (channels == 3 ? "PPM" : "PGM"));
  return {};
}

}  // namespace

Result writePpm(const std::string& path, const uint8_t* rgb, int width, int height) {
  return writeRawPnm(path, "P6", rgb, width, height, 3);
}

Result writePgm16(const std::string& path, const uint16_t* values, int width, int height, bool bigEndian) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return ioError("cannot write", path);
  std::fprintf(f, "P5 %d %d 65535\n", width, height);
  size_t n = static_cast<size_t>(width) * height;
  std::vector<uint8_t> bytes(n * 2);
  for (size_t i = 0; i < n; ++i) {
    uint16_t v = values[i];
    bytes[2 * i] = static_cast<uint8_t>(bigEndian ? v >> 8 : v & 0xff);
    bytes[2 * i + 1] = static_cast<uint8_t>(bigEndian ? v & 0xff : v >> 8);
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? Result{} : ioError("cannot write", path);
}

Result readPpm(const std::string& path, std::vector<uint8_t>* rgb, int* width, int* height) {
  return readRawPnm(path, "P6", 3, rgb, width, height);
}

Result readPgm16(const std::string& path, std::vector<uint16_t>* values, int* width, int* height) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError("cannot read", path);
  std::string magic;
  int maxval = 0;
  if (!readPnmHeader(in, &magic, width, height, &maxval) || magic != "P5" || maxval < 256 || maxval > 65535)
    return Result::fail(Status::Internal, path + ": not a binary 16-bit PGM (P5, maxval > 255)");
  size_t n = static_cast<size_t>(*width) * *height;
  std::vector<uint8_t> bytes(n * 2);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size()) return Result::fail(Status::Internal, path + ": truncated PGM");
  values->resize(n);
  for (size_t i = 0; i < n; ++i) (*values)[i] = static_cast<uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
  return {};
}

Result writePgm8(const std::string& path, const uint8_t* values, int width, int height) {
  return writeRawPnm(path, "P5", values, width, height, 1);
}

Result readPgm8(const std::string& path, std::vector<uint8_t>* values, int* width, int* height) {
  return readRawPnm(path, "P5", 1, values, width, height);
}

// ---- Writer -------------------------------------------------------------------------------------------

RecordingWriter::~RecordingWriter() { close(); }

Result RecordingWriter::open(const std::string& dir, RecordingFormat format) {
  close();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ioError("cannot create", dir);
  const char* indexName = format == RecordingFormat::FaceCheck ? "/recording.txt" : "/INDEX.txt";
  if (exists(dir + indexName)) return Result::fail(Status::FieldsValidation, dir + " already holds a recording");
  index_ = std::fopen((dir + indexName).c_str(), "w");
  if (!index_) return ioError("cannot write", dir + indexName);
  dir_ = dir;
  format_ = format;
  frames_ = 0;
  firstUs_ = -1;
  return {};
}

Result RecordingWriter::write(const CameraFrame& frame) {
  if (!index_) return Result::fail(Status::Internal, "recording is not open");
  char name[96];
  if (format_ == RecordingFormat::FaceCheck) {
    if (frames_ == 0) {
      width_ = frame.width;
      height_ = frame.height;
      std::fprintf(index_, "face-check-recording 1\nsize %d %d\nintrinsics %.6f %.6f %.6f %.6f\n", frame.width,
                   frame.height, frame.intrinsics.fx, frame.intrinsics.fy, frame.intrinsics.cx, frame.intrinsics.cy);
    } else if (frame.width != width_ || frame.height != height_) {
      return Result::fail(Status::Internal, "frame size changed during the recording");
    }
    std::snprintf(name, sizeof name, "%06llu", static_cast<unsigned long long>(frames_));
    std::string colour = std::string(name) + ".ppm", depth = frame.hasDepth() ? std::string(name) + ".pgm" : "-";
    Result r = writePpm(dir_ + "/" + colour, frame.rgb.data(), frame.width, frame.height);
    if (r.ok() && frame.hasDepth()) r = writePgm16(dir_ + "/" + depth, frame.depth.data(), frame.width, frame.height, true);
    const bool infrared = frame.ir.size() == static_cast<size_t>(frame.width) * frame.height;
    std::string ir = infrared ? std::string(name) + "-ir.pgm" : "";
    if (r.ok() && infrared) r = writePgm8(dir_ + "/" + ir, frame.ir.data(), frame.width, frame.height);
    if (!r.ok()) return r;
    std::fprintf(index_, "frame %lld %s %s%s%s\n", static_cast<long long>(frame.timestampUs), colour.c_str(), depth.c_str(),
                 infrared ? " " : "", ir.c_str());
  } else {
    // fakenect replays 640x480 only; the wall-clock column is seconds since the first frame (+1, since
    // fakenect treats a time of 0 as "no previous frame").
    if (frame.width != 640 || frame.height != 480)
      return Result::fail(Status::FieldsValidation, "fakenect recordings are 640x480");
    if (firstUs_ < 0) firstUs_ = frame.timestampUs;
    double t = 1.0 + (frame.timestampUs - firstUs_) / 1e6;
    unsigned ts = static_cast<unsigned>(frame.sequence * 1001u);
    if (frame.hasDepth()) {
      std::vector<uint16_t> raw(frame.depth.size());
      for (size_t i = 0; i < raw.size(); ++i) raw[i] = kinectMmToRaw(frame.depth[i]);
      std::snprintf(name, sizeof name, "d-%f-%u.pgm", t, ts);
      Result r = writePgm16(dir_ + "/" + name, raw.data(), 640, 480, false);
      if (!r.ok()) return r;
      std::fprintf(index_, "%s\n", name);
    }
    std::snprintf(name, sizeof name, "r-%f-%u.ppm", t + 0.0001, ts);
    Result r = writePpm(dir_ + "/" + name, frame.rgb.data(), 640, 480);
    if (!r.ok()) return r;
    std::fprintf(index_, "%s\n", name);
  }
  ++frames_;
  if (std::fflush(index_) != 0) return ioError("cannot write", dir_);
  return {};
}

Result RecordingWriter::close() {
  if (!index_) return {};
  bool ok = std::fclose(index_) == 0;
  index_ = nullptr;
  return ok ? Result{} : ioError("cannot write", dir_);
}

// ---- Reader -------------------------------------------------------------------------------------------

Result readRecordingIndex(const std::string& dir, RecordingIndex* out) {
  std::ifstream in(dir + "/recording.txt");
  if (!in) return Result::fail(Status::CameraNotConnected, "no recording at " + dir + " (recording.txt missing)");
  *out = RecordingIndex{};
  std::string line;
  int lineNo = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "face-check-recording") {
      int version = 0;
      ls >> version;
      if (version != 1) return Result::fail(Status::FieldsValidation, dir + ": unsupported recording version");
      header = true;
    } else if (key == "size") {
      ls >> out->width >> out->height;
    } else if (key == "intrinsics") {
      ls >> out->intrinsics.fx >> out->intrinsics.fy >> out->intrinsics.cx >> out->intrinsics.cy;
    } else if (key == "frame") {
      RecordingIndex::Entry e;
      std::string colour, depth, infrared;
      ls >> e.timestampUs >> colour >> depth;
      if (colour.empty() || depth.empty())
        return Result::fail(Status::FieldsValidation, dir + "/recording.txt line " + std::to_string(lineNo) + ": bad frame line");
      if (!ls.fail() && (ls >> infrared)) e.infrared = dir + "/" + infrared;
      ls.clear();
      e.colour = dir + "/" + colour;
      if (depth != "-") {
        e.depth = dir + "/" + depth;
        out->hasDepth = true;
      }
      out->frames.push_back(std::move(e));
    } else {
      return Result::fail(Status::FieldsValidation,
                          dir + "/recording.txt line " + std::to_string(lineNo) + ": unknown item " + key);
    }
    if (ls.fail()) return Result::fail(Status::FieldsValidation, dir + "/recording.txt line " + std::to_string(lineNo) + ": malformed");
  }
  if (!header) return Result::fail(Status::FieldsValidation, dir + ": not a face-check recording");
  if (out->width <= 0 || out->height <= 0) return Result::fail(Status::FieldsValidation, dir + ": size missing");
  if (out->frames.empty()) return Result::fail(Status::CameraNotConnected, dir + ": the recording has no frames");
  return {};
}

Result readFrameFiles(const RecordingIndex& index, size_t i, CameraFrame* frame) {
  const RecordingIndex::Entry& e = index.frames[i];
  int w = 0, h = 0;
  Result r = readPpm(e.colour, &frame->rgb, &w, &h);
  if (!r.ok()) return r;
  if (w != index.width || h != index.height) return Result::fail(Status::Internal, e.colour + ": size differs from the index");
  frame->width = w;
  frame->height = h;
  frame->depth.clear();
  if (!e.depth.empty()) {
    int dw = 0, dh = 0;
    r = readPgm16(e.depth, &frame->depth, &dw, &dh);
    if (!r.ok()) return r;
    if (dw != w || dh != h) return Result::fail(Status::Internal, e.depth + ": depth is not registered to colour (size differs)");
  }
  frame->ir.clear();
  if (!e.infrared.empty()) {
    int iw = 0, ih = 0;
    r = readPgm8(e.infrared, &frame->ir, &iw, &ih);
    if (!r.ok()) return r;
    if (iw != w || ih != h) return Result::fail(Status::Internal, e.infrared + ": infrared is not registered to colour (size differs)");
  }
  frame->intrinsics = index.intrinsics;
  return {};
}

}  // namespace facecheck
