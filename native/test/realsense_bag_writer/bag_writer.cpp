// Test tool: writes a face-check recording as an Intel RealSense .bag file, the way librealsense itself
// records a D435 session, so that rs2::playback (rs2_config_enable_device_from_file) replays it through the
// realsense source like a recorded camera. Built against librealsense (test/helpers/realsense.ts compiles
// it against the cached build of scripts/build-librealsense.js); never shipped.
//
//   bag_writer <recording dir> <out.bag> [options]            write the bag
//   bag_writer --verify <recording dir> <bag> [options]       play the bag back and compare it with the
//                                                             recording; one JSON line on stdout
// options (the same for both, so that --verify knows what was written):
//   --depth-units 0.001|0.0001   the depth sensor's RS2_OPTION_DEPTH_UNITS (metres per depth unit)
//   --stereo-profile             degrade depth as an active-stereo D4xx measures it (see applyStereoProfile)
//   --separate-depth-camera      depth in the depth imager's own frame and intrinsics, not registered to
//                                colour (what a D435 streams: the reader must align it with rs2::align)
//   --no-depth                   a device without a depth sensor (colour only)
// A recording that holds infrared images (the synthetic source with infrared = true) gets the stereo
// module's left infrared stream too (Y8, index 1, on depth's pixel grid and intrinsics, as a D4xx gives it).
//   --seed <n>                   the stereo profile's noise seed (default 1)
//   --realtime                   push each frame at its recorded time: the bag's message times (which
//                                librealsense paces real-time playback by) then follow the recording; by
//                                default frames are pushed as fast as the recorder writes them
//
// How librealsense 2.13 records and plays (read in its source; these decide how the tool works):
// - Recording: rs2::recorder hands every frame to one writer thread (an unbounded queue) and keeps it alive
//   until written. A software sensor's frames come from a pool of 16 published frames per stream
//   (RS2_OPTION_FRAMES_QUEUE_SIZE); when the writer lags and the pool is empty, on_video_frame drops the
//   frame silently (it never reaches the recorder and its deleter is never called). So at most
//   kMaxInFlight frames per stream are pushed unreleased: a frame's deleter runs once the recorder has
//   written and released it.
// - Stopping the recorder's sensors while its writer still has frames queued loses them (and can crash
//   2.13); so the tool waits until every pushed frame is released (with a timeout), then stops the sensors,
//   then destroys the recorder (which flushes its writer and closes the file).
// - Times: the bag keeps two per frame. The message time is the recorder's arrival time since recording
//   started, which real-time playback sleeps by; the image header's stamp and seq are the frame's own
//   timestamp and number, which playback returns: the recording's timestamps come back unchanged.
// - Extrinsics: 2.13's software_device puts no stream in an extrinsics group, so the recorder writes no
//   depth-to-colour extrinsics; scripts/librealsense-patches.js backports the fix (the cached build has it).
// - Camera info cannot be set: 2.13's software_device names itself "Software-Device" and has no call to
//   register other info (later releases add rs2_software_device_register_info).
// - Playback start: the reading thread starts with the first sensor started and reads at once; a frame read
//   for a sensor not yet started is dropped (and one read between a sensor's start and the moment its
//   callback is stored is handed to no callback). Pausing first does not prevent it: a paused playback
//   still reads one message when it starts. The bag cannot lead with something harmless either: the
//   recorder's clock starts at its first frame, and what it writes before (an option) is stamped 0, which
//   playback never reads. So --verify pauses, starts every sensor, seeks back to 0 and resumes, and counts
//   a frame delivered twice (the one read before the seek) once. A reader that starts its sensors one by
//   one may miss the first frame or two. The status reads STOPPED until the reading thread has started.
// - Playback end: the reading thread stops the sensors itself at the end of the file; stopping or closing
//   them from another thread at that moment crashes 2.13 (playback_sensor::stop), so --verify waits for
//   STOPPED before closing them.
// - Non-real-time playback keeps 10 frames per stream and drops the oldest when the reader is ahead of the
//   callback; real-time playback waits for each callback. --verify plays in real time (at the pace the
//   frames were written) and its callback only copies.
#include <librealsense2/rs.hpp>
#include <librealsense2/hpp/rs_internal.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <algorithm>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/camera/recording.h"

namespace {

using facecheck::CameraFrame;
using facecheck::RecordingIndex;
using Clock = std::chrono::steady_clock;

// ---- The D435 being imitated ------------------------------------------------------------------------------
// Stereo baseline: the distance between the D435's two IR imagers (Intel's D400 datasheet: 50 mm).
constexpr double kBaselineMm = 50.0;
// The RGB imager sits beside the left IR imager, the depth origin; Intel's calibrations of D435 units put
// the depth-to-colour translation at about 15 mm along x (rotation close to identity).
constexpr float kDepthToColourM = 0.015f;
// Horizontal fields of view (datasheet): depth 87 degrees, colour 69 degrees. The depth imager's focal
// length in pixels, for the same image width, is the colour one times tan(69/2) / tan(87/2).
constexpr double kDepthHfovDeg = 87.0, kColourHfovDeg = 69.0;
// Two calibrated imagers never share a principal point; a few pixels apart, so that a reader that skips
// the alignment sees its depth land off the colour image.
constexpr double kDepthPrincipalShiftX = 3.0, kDepthPrincipalShiftY = -2.0;
// The minimum distance a D435 measures at 848x480 and 640x480 (datasheet's minimum-Z: about 280 mm);
// nearer, the disparity exceeds the matcher's search range and the camera reports no depth.
constexpr double kMinRangeMm = 280.0;
// RMS subpixel accuracy of the D4xx stereo matcher on a well-textured target (Intel's depth tuning guide
// quotes 0.08 pixel); with sigma_z = z^2 * subpixel / (f * baseline) it gives the camera's depth noise.
constexpr double kSubpixel = 0.08;
// Dark surfaces: below kDarkAlways (of 255, about 10% of full scale) the projector's near-IR is absorbed
// and there is no passive texture either, so the matcher finds no correlation peak: a hole; between
// kDarkAlways and kDarkNever the chance of a hole falls linearly (visible brightness is only a proxy for
// IR reflectance, so the edge is soft).
constexpr double kDarkAlways = 24.0, kDarkNever = 48.0;
// Frames per stream pushed but not yet written and released by the recorder: below the 16 frames a
// software sensor publishes before it drops (RS2_OPTION_FRAMES_QUEUE_SIZE's default).
constexpr int kMaxInFlight = 8;
// How long the recorder may take to write what is queued, and playback to deliver, before the tool fails.
constexpr auto kDrainTimeout = std::chrono::seconds(60);
constexpr int kDefaultFps = 30;
// The streams' unique ids within the device (any two distinct values).
constexpr int kDepthUid = 0, kColourUid = 1, kInfraredUid = 2;

struct Options {
  std::string recording, bag;
  bool verify = false;
  float depthUnits = 0.001f;
  bool stereo = false, separate = false, noDepth = false, realtime = false;
  uint32_t seed = 1;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "bag_writer: %s\nusage: bag_writer [--verify] <recording dir> <bag> [--depth-units 0.001|0.0001] "
               "[--stereo-profile] [--separate-depth-camera] [--no-depth] [--seed n] [--realtime]\n", why);
  std::exit(2);
}

Options parseArgs(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--verify") o.verify = true;
    else if (a == "--depth-units") {
      std::string v = value();
      if (v == "0.001") o.depthUnits = 0.001f;
      else if (v == "0.0001") o.depthUnits = 0.0001f;
      else usage("--depth-units is 0.001 or 0.0001");
    } else if (a == "--stereo-profile") o.stereo = true;
    else if (a == "--separate-depth-camera") o.separate = true;
    else if (a == "--no-depth") o.noDepth = true;
    else if (a == "--realtime") o.realtime = true;
    else if (a == "--seed") o.seed = static_cast<uint32_t>(std::strtoul(value().c_str(), nullptr, 10));
    else if (a.rfind("--", 0) == 0) usage(("unknown option " + a).c_str());
    else positional.push_back(a);
  }
  if (positional.size() != 2) usage("expected a recording folder and a bag file");
  o.recording = positional[0];
  o.bag = positional[1];
  return o;
}

// ---- Geometry ---------------------------------------------------------------------------------------------

struct Geometry {
  int width = 0, height = 0, fps = kDefaultFps;
  rs2_intrinsics colour{}, depth{};
  rs2_extrinsics depthToColour{};
};

rs2_intrinsics intrinsics(int w, int h, double fx, double fy, double cx, double cy, rs2_distortion model) {
  rs2_intrinsics in{};
  in.width = w;
  in.height = h;
  in.fx = static_cast<float>(fx);
  in.fy = static_cast<float>(fy);
  in.ppx = static_cast<float>(cx);
  in.ppy = static_cast<float>(cy);
  in.model = model;  // the models a D435 reports, with zero coefficients as its factory calibration has
  return in;
}

/** The recording's rate: the median interval between frames, else 30 fps. */
int recordedFps(const RecordingIndex& index) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < index.frames.size(); ++i) gaps.push_back(index.frames[i].timestampUs - index.frames[i - 1].timestampUs);
  if (gaps.empty()) return kDefaultFps;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  int64_t median = gaps[gaps.size() / 2];
  if (median <= 0) return kDefaultFps;
  return std::max(1, static_cast<int>(std::lround(1e6 / static_cast<double>(median))));
}

Geometry geometryFor(const RecordingIndex& index, const Options& o) {
  Geometry g;
  g.width = index.width;
  g.height = index.height;
  g.fps = recordedFps(index);
  const auto& in = index.intrinsics;
  g.colour = intrinsics(g.width, g.height, in.fx, in.fy, in.cx, in.cy, RS2_DISTORTION_INVERSE_BROWN_CONRADY);
  const float identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  std::memcpy(g.depthToColour.rotation, identity, sizeof identity);
  if (o.separate) {
    const double pi = std::acos(-1.0);
    double scale = std::tan(kColourHfovDeg / 2 * pi / 180) / std::tan(kDepthHfovDeg / 2 * pi / 180);
    g.depth = intrinsics(g.width, g.height, in.fx * scale, in.fy * scale, in.cx + kDepthPrincipalShiftX,
                         in.cy + kDepthPrincipalShiftY, RS2_DISTORTION_BROWN_CONRADY);
    g.depthToColour.translation[0] = kDepthToColourM;
  } else {
    // Registered: the depth stream already lies on the colour pixel grid (as the recording's does).
    g.depth = g.colour;
    g.depth.model = RS2_DISTORTION_BROWN_CONRADY;
  }
  return g;
}

// ---- Depth as the camera would stream it ------------------------------------------------------------------

/** Deterministic uniform (0,1) and normal draws: mt19937's sequence is fixed by the standard, unlike
 *  std::normal_distribution's, so a seed gives the same bag everywhere. */
struct Noise {
  std::mt19937 rng;
  explicit Noise(uint32_t seed) : rng(seed) {}
  double uniform() { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::acos(-1.0) * u2);
  }
};

/** Depth noise of an active stereo camera at distance z (mm): sigma_z = z^2 * subpixel / (f * baseline). */
double stereoSigmaMm(double zMm, double fPixels) { return zMm * zMm * kSubpixel / (fPixels * kBaselineMm); }

/**
 * Degrades registered depth (millimetres, on the colour grid) as a D4xx active stereo camera measures it.
 * `fDepth` is the depth imager's focal length in pixels (the noise depends on its disparity resolution);
 * `fGrid` that of the grid the depth lies on (the occlusion band's width is a disparity on that grid).
 */
void applyStereoProfile(std::vector<double>& z, const std::vector<uint8_t>& rgb, int w, int h, double fDepth,
                        double fGrid, Noise& noise) {
  // Occlusion band: the depth map is the left imager's view; the right imager, one baseline to the right,
  // cannot see the background just left of a foreground object's left edge (the object hides it), so the
  // matcher has nothing to match there. The hidden band is the disparity difference between background
  // and foreground: f * B * (1/z_near - 1/z_far) pixels. Computed on the clean depth, before any other
  // effect (a measured edge is where the surfaces are).
  std::vector<uint8_t> occluded(z.size(), 0);
  for (int y = 0; y < h; ++y) {
    const double* row = &z[static_cast<size_t>(y) * w];
    for (int x = 1; x < w; ++x) {
      double far = row[x - 1], near = row[x];
      if (far <= 0 || near <= 0 || near >= far) continue;
      int band = static_cast<int>(fGrid * kBaselineMm * (1.0 / near - 1.0 / far));
      for (int k = std::max(0, x - band); k < x; ++k) occluded[static_cast<size_t>(y) * w + k] = 1;
    }
  }
  for (size_t i = 0; i < z.size(); ++i) {
    if (z[i] <= 0) continue;
    if (occluded[i] || z[i] < kMinRangeMm) {
      z[i] = 0;
      continue;
    }
    const uint8_t* p = &rgb[i * 3];
    double luma = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    double holeChance = std::clamp((kDarkNever - luma) / (kDarkNever - kDarkAlways), 0.0, 1.0);
    // One draw per pixel whatever the outcome, so that the noise of every other pixel does not depend on
    // which pixels are dark.
    double draw = noise.uniform();
    double err = noise.normal() * stereoSigmaMm(z[i], fDepth);
    if (draw < holeChance) {
      z[i] = 0;
      continue;
    }
    z[i] += err;
  }
}

/**
 * Moves registered depth (colour grid, mm) into the depth imager's frame: each pixel is deprojected with
 * the colour intrinsics, moved by the colour-to-depth extrinsics, projected with the depth intrinsics; the
 * nearest surface wins where several land on one depth pixel (a z-buffer), as the imager would see it.
 */
std::vector<double> toDepthCamera(const std::vector<double>& z, const Geometry& g,
                                  const std::vector<uint8_t>* infrared = nullptr, std::vector<uint8_t>* infraredOut = nullptr) {
  std::vector<double> out(z.size(), 0.0);
  std::vector<double> irDepth(infraredOut ? z.size() : 0, 0.0);
  if (infraredOut) infraredOut->assign(z.size(), 0);
  const rs2_intrinsics& c = g.colour;
  const rs2_intrinsics& d = g.depth;
  const double tx = g.depthToColour.translation[0] * 1000.0, ty = g.depthToColour.translation[1] * 1000.0,
               tz = g.depthToColour.translation[2] * 1000.0;
  for (int v = 0; v < g.height; ++v) {
    for (int u = 0; u < g.width; ++u) {
      double zc = z[static_cast<size_t>(v) * g.width + u];
      if (zc <= 0) continue;
      // Colour frame point; depth frame point = colour point - translation (the rotation is identity).
      double xc = (u - c.ppx) / c.fx * zc, yc = (v - c.ppy) / c.fy * zc;
      double xd = xc - tx, yd = yc - ty, zd = zc - tz;
      if (zd <= 0) continue;
      int ud = static_cast<int>(std::lround(d.fx * xd / zd + d.ppx));
      int vd = static_cast<int>(std::lround(d.fy * yd / zd + d.ppy));
      if (ud < 0 || vd < 0 || ud >= g.width || vd >= g.height) continue;
      double& cell = out[static_cast<size_t>(vd) * g.width + ud];
      if (cell == 0 || zd < cell) cell = zd;
      // The infrared image is whole on the left imager (it is an image, holes or not in depth): each colour
      // pixel's level fills the depth pixels its footprint covers, nearest surface kept.
      if (infrared && infraredOut) {
        const uint8_t level = (*infrared)[static_cast<size_t>(v) * g.width + u];
        auto px = [&](double du, double dv, int* x, int* y) {
          double xc2 = (u + du - c.ppx) / c.fx * zc, yc2 = (v + dv - c.ppy) / c.fy * zc;
          *x = static_cast<int>(std::lround(d.fx * (xc2 - tx) / zd + d.ppx));
          *y = static_cast<int>(std::lround(d.fy * (yc2 - ty) / zd + d.ppy));
        };
        int xa, ya, xb, yb;
        px(-0.5, -0.5, &xa, &ya);
        px(0.5, 0.5, &xb, &yb);
        for (int y = std::max(0, std::min(ya, yb)); y <= std::min(g.height - 1, std::max(ya, yb)); ++y)
          for (int x = std::max(0, std::min(xa, xb)); x <= std::min(g.width - 1, std::max(xa, xb)); ++x) {
            const size_t at = static_cast<size_t>(y) * g.width + x;
            if (irDepth[at] == 0 || zd < irDepth[at]) {
              irDepth[at] = zd;
              (*infraredOut)[at] = level;
            }
          }
      }
    }
  }
  return out;
}

/** The depth frame the tool writes for recording frame `i` (in depth units), or empty: no depth. */
std::vector<uint16_t> streamedDepth(const CameraFrame& f, size_t i, const Options& o, const Geometry& g) {
  if (f.depth.empty()) return {};
  std::vector<double> z(f.depth.begin(), f.depth.end());
  if (o.stereo) {
    Noise noise(o.seed * 2654435761u + static_cast<uint32_t>(i));  // per frame: frames are independent
    applyStereoProfile(z, f.rgb, g.width, g.height, g.depth.fx, g.colour.fx, noise);
  }
  if (o.separate) z = toDepthCamera(z, g);
  // Quantisation to the depth units; a distance the 16-bit value cannot hold is no measurement.
  std::vector<uint16_t> units(z.size(), 0);
  const double perMm = 0.001 / o.depthUnits;
  for (size_t k = 0; k < z.size(); ++k) {
    if (z[k] <= 0) continue;
    long v = std::lround(z[k] * perMm);
    units[k] = v > 0 && v <= 65535 ? static_cast<uint16_t>(v) : 0;
  }
  return units;
}

Geometry loadRecording(const Options& o, RecordingIndex* index) {
  facecheck::Result r = facecheck::readRecordingIndex(o.recording, index);
  if (!r.ok()) {
    std::fprintf(stderr, "bag_writer: %s\n", r.detail.c_str());
    std::exit(1);
  }
  return geometryFor(*index, o);
}

CameraFrame loadFrame(const RecordingIndex& index, size_t i) {
  CameraFrame f;
  facecheck::Result r = facecheck::readFrameFiles(index, i, &f);
  if (!r.ok()) {
    std::fprintf(stderr, "bag_writer: %s\n", r.detail.c_str());
    std::exit(1);
  }
  return f;
}

// ---- Writing ----------------------------------------------------------------------------------------------

// Frames pushed and not yet released by librealsense, per stream; the deleters are plain functions.
std::atomic<int> gDepthInFlight{0}, gColourInFlight{0}, gInfraredInFlight{0};
void releaseInfrared(void* p) {
  delete[] static_cast<uint8_t*>(p);
  --gInfraredInFlight;
}
void releaseDepth(void* p) {
  delete[] static_cast<uint8_t*>(p);
  --gDepthInFlight;
}
void releaseColour(void* p) {
  delete[] static_cast<uint8_t*>(p);
  --gColourInFlight;
}

bool waitUntil(const std::function<bool()>& done, Clock::duration timeout) {
  auto end = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int writeBag(const Options& o) {
  RecordingIndex index;
  Geometry g = loadRecording(o, &index);
  const bool withDepth = !o.noDepth && index.hasDepth;
  const bool withInfrared = withDepth && !index.frames.front().infrared.empty();
  std::remove(o.bag.c_str());  // a bag left by an earlier run is replaced, never added to
  int pushedDepth = 0, pushedColour = 0, pushedInfrared = 0;
  std::atomic<int> seenDepth{0}, seenColour{0}, seenInfrared{0};
  {
    rs2::software_device dev;
    // A D435's sensors, in its order: the stereo module first, then the RGB camera.
    std::optional<rs2::software_sensor> depthSensor;
    if (withDepth) depthSensor = dev.add_sensor("Stereo Module");
    rs2::software_sensor colourSensor = dev.add_sensor("RGB Camera");
    rs2::stream_profile depthStream, colourStream, infraredStream;
    colourStream = colourSensor.add_video_stream({RS2_STREAM_COLOR, 0, kColourUid, g.width, g.height, g.fps, 3, RS2_FORMAT_RGB8, g.colour});
    if (withDepth) {
      depthStream = depthSensor->add_video_stream({RS2_STREAM_DEPTH, 0, kDepthUid, g.width, g.height, g.fps, 2, RS2_FORMAT_Z16, g.depth});
      depthSensor->add_read_only_option(RS2_OPTION_DEPTH_UNITS, o.depthUnits);
      depthSensor->add_read_only_option(RS2_OPTION_STEREO_BASELINE, static_cast<float>(kBaselineMm));
      depthStream.register_extrinsics_to(colourStream, g.depthToColour);
      if (withInfrared) {
        infraredStream = depthSensor->add_video_stream({RS2_STREAM_INFRARED, 1, kInfraredUid, g.width, g.height, g.fps, 1, RS2_FORMAT_Y8, g.depth});
        infraredStream.register_extrinsics_to(depthStream, {{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}});
      }
    }

    rs2::recorder rec(o.bag, dev);
    std::vector<rs2::sensor> recSensors = rec.query_sensors();
    rs2::sensor recDepth, recColour;
    for (auto& s : recSensors) {
      std::string name = s.get_info(RS2_CAMERA_INFO_NAME);
      if (name == "Stereo Module") recDepth = s;
      if (name == "RGB Camera") recColour = s;
    }
    if (withInfrared) recDepth.open(std::vector<rs2::stream_profile>{depthStream, infraredStream});
    else if (withDepth) recDepth.open(depthStream);
    recColour.open(colourStream);
    if (withDepth) recDepth.start([&](rs2::frame f) { ++(f.get_profile().stream_type() == RS2_STREAM_INFRARED ? seenInfrared : seenDepth); });
    recColour.start([&](rs2::frame) { ++seenColour; });

    const auto wallStart = Clock::now();
    const int64_t firstUs = index.frames.front().timestampUs;
    for (size_t i = 0; i < index.frames.size(); ++i) {
      CameraFrame f = loadFrame(index, i);
      if (o.realtime) std::this_thread::sleep_until(wallStart + std::chrono::microseconds(index.frames[i].timestampUs - firstUs));
      bool room = waitUntil([] { return gDepthInFlight < kMaxInFlight && gColourInFlight < kMaxInFlight && gInfraredInFlight < kMaxInFlight; }, kDrainTimeout);
      if (!room) {
        std::fprintf(stderr, "bag_writer: the recorder stopped releasing frames (frame %zu)\n", i);
        return 1;
      }
      const double timestampMs = static_cast<double>(index.frames[i].timestampUs) / 1000.0;
      const int frameNumber = static_cast<int>(i) + 1;
      if (withInfrared && f.ir.size() == f.rgb.size() / 3) {
        std::vector<uint8_t> ir = f.ir;
        if (o.separate) {
          std::vector<double> z(f.depth.begin(), f.depth.end());
          toDepthCamera(z, g, &f.ir, &ir);
        }
        auto* irPixels = new uint8_t[ir.size()];
        std::memcpy(irPixels, ir.data(), ir.size());
        ++gInfraredInFlight;
        ++pushedInfrared;
        depthSensor->on_video_frame({irPixels, releaseInfrared, g.width, 1, timestampMs, RS2_TIMESTAMP_DOMAIN_HARDWARE_CLOCK,
                                    frameNumber, infraredStream});
      }
      if (withDepth && !f.depth.empty()) {
        std::vector<uint16_t> depth = streamedDepth(f, i, o, g);
        auto* pixels = new uint8_t[depth.size() * 2];
        std::memcpy(pixels, depth.data(), depth.size() * 2);
        ++gDepthInFlight;
        ++pushedDepth;
        depthSensor->on_video_frame({pixels, releaseDepth, g.width * 2, 2, timestampMs, RS2_TIMESTAMP_DOMAIN_HARDWARE_CLOCK,
                                    frameNumber, depthStream});
      }
      auto* pixels = new uint8_t[f.rgb.size()];
      std::memcpy(pixels, f.rgb.data(), f.rgb.size());
      ++gColourInFlight;
      ++pushedColour;
      colourSensor.on_video_frame({pixels, releaseColour, g.width * 3, 3, timestampMs, RS2_TIMESTAMP_DOMAIN_HARDWARE_CLOCK,
                                   frameNumber, colourStream});
    }
    // Every frame written and released before the sensors stop (see the top of this file).
    bool drained = waitUntil([] { return gDepthInFlight == 0 && gColourInFlight == 0 && gInfraredInFlight == 0; }, kDrainTimeout);
    if (!drained || seenDepth != pushedDepth || seenColour != pushedColour || seenInfrared != pushedInfrared) {
      std::fprintf(stderr, "bag_writer: frames lost while recording: depth %d of %d delivered, colour %d of %d, "
                   "%d + %d never released\n", seenDepth.load(), pushedDepth, seenColour.load(), pushedColour,
                   gDepthInFlight.load(), gColourInFlight.load());
      return 1;
    }
    if (withDepth) recDepth.stop();
    recColour.stop();
    if (withDepth) recDepth.close();
    recColour.close();
  }  // the recorder flushes its writer and closes the file here
  std::printf("{\"depth_frames\":%d,\"colour_frames\":%d,\"infrared_frames\":%d,\"fps\":%d}\n", pushedDepth, pushedColour,
              pushedInfrared, g.fps);
  return 0;
}

// ---- Verifying: play the bag back and compare it with the recording -------------------------------------

struct StreamTally {
  int frames = 0;
  int recordedTimestamps = 0;  // frames whose timestamp is one of the recording's
  int hardwareClock = 0;       // frames in RS2_TIMESTAMP_DOMAIN_HARDWARE_CLOCK
  int exact = 0;               // frames whose pixels are exactly the ones written
  bool numbersIncrease = true;
  long long lastNumber = -1;
  std::set<int64_t> timestamps;
};

/** Registered depth against the recording's millimetres (only where the depth lies on the colour grid). */
struct DepthAgreement {
  long long compared = 0;     // pixels measured in the recording
  long long within = 0;       // ... measured in the bag within the tolerance (exact but for units without
                              // the stereo profile; 4 sigma of its noise with it)
  long long holes = 0;        // ... not measured in the bag
  long long belowMinRange = 0;  // pixels measured in the bag nearer than the D435's minimum range
  double maxError = 0;        // mm, among `within` and beyond
};

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string intrinsicsJson(const rs2_intrinsics& in) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "{\"width\":%d,\"height\":%d,\"fx\":%.4f,\"fy\":%.4f,\"cx\":%.4f,\"cy\":%.4f}", in.width,
                in.height, in.fx, in.fy, in.ppx, in.ppy);
  return buf;
}

/** The stream's tally; `missing`: the first recorded frames (indices) that did not come back. */
std::string tallyJson(const StreamTally& t, const std::vector<int64_t>& recorded) {
  std::string missing;
  int listed = 0;
  for (size_t i = 0; i < recorded.size() && listed < 20; ++i) {
    if (t.timestamps.count(recorded[i])) continue;
    missing += (missing.empty() ? "" : ",") + std::to_string(i);
    ++listed;
  }
  char buf[300];
  std::snprintf(buf, sizeof buf, "{\"frames\":%d,\"distinct_timestamps\":%zu,\"recorded_timestamps\":%d,\"hardware_clock\":%d,"
                "\"exact\":%d,\"frame_numbers_increase\":%s,\"missing\":[", t.frames, t.timestamps.size(), t.recordedTimestamps,
                t.hardwareClock, t.exact, t.numbersIncrease ? "true" : "false");
  return buf + missing + "]}";
}

int verifyBag(const Options& o) {
  RecordingIndex index;
  Geometry g = loadRecording(o, &index);
  std::map<int64_t, size_t> byTimestamp;
  std::vector<int64_t> recordedUs, recordedDepthUs;
  for (size_t i = 0; i < index.frames.size(); ++i) {
    byTimestamp[index.frames[i].timestampUs] = i;
    recordedUs.push_back(index.frames[i].timestampUs);
    if (!index.frames[i].depth.empty() && !o.noDepth) recordedDepthUs.push_back(index.frames[i].timestampUs);
  }
  const int recordedDepth = static_cast<int>(recordedDepthUs.size());
  const double unitMm = o.depthUnits * 1000.0;

  rs2::context ctx;
  rs2::device dev = ctx.load_device(o.bag);
  rs2::playback pb = dev.as<rs2::playback>();
  pb.set_real_time(true);  // lossless in 2.13 (see the top of this file)

  std::string sensors, streams, extrinsics = "null";
  float depthUnits = 0, baseline = 0;
  bool depthSensorExtension = false;
  rs2::stream_profile depthProfile, colourProfile;
  for (rs2::sensor& s : dev.query_sensors()) {
    sensors += (sensors.empty() ? "" : ",") + jsonString(s.get_info(RS2_CAMERA_INFO_NAME));
    if (s.supports(RS2_OPTION_DEPTH_UNITS)) depthUnits = s.get_option(RS2_OPTION_DEPTH_UNITS);
    if (s.supports(RS2_OPTION_STEREO_BASELINE)) baseline = s.get_option(RS2_OPTION_STEREO_BASELINE);
    if (s.is<rs2::depth_sensor>()) depthSensorExtension = true;
    for (rs2::stream_profile& p : s.get_stream_profiles()) {
      auto v = p.as<rs2::video_stream_profile>();
      if (!v) continue;
      if (p.stream_type() == RS2_STREAM_DEPTH) depthProfile = p;
      if (p.stream_type() == RS2_STREAM_COLOR) colourProfile = p;
      char head[160];
      std::snprintf(head, sizeof head, "{\"stream\":%s,\"format\":%s,\"fps\":%d,\"intrinsics\":", jsonString(p.stream_name()).c_str(),
                    jsonString(rs2_format_to_string(p.format())).c_str(), p.fps());
      streams += (streams.empty() ? "" : ",") + std::string(head) + intrinsicsJson(v.get_intrinsics()) + "}";
    }
  }
  if (depthProfile && colourProfile) {
    try {
      rs2_extrinsics e = depthProfile.get_extrinsics_to(colourProfile);
      char buf[120];
      std::snprintf(buf, sizeof buf, "[%.5f,%.5f,%.5f]", e.translation[0], e.translation[1], e.translation[2]);
      extrinsics = buf;
    } catch (const rs2::error&) {
      // not in the bag: reported as null
    }
  }

  // The callback only copies each frame (a slow callback would make 2.13's playback drop frames in
  // non-real-time mode, or stretch real-time playback); the comparison runs once playback has ended. So
  // the whole recording is held in memory: fine for test scenes of seconds.
  struct Played {
    bool depth;
    int64_t us;
    rs2_timestamp_domain domain;
    unsigned long long number;
    int stride;
    std::vector<uint8_t> pixels;
  };
  std::mutex mutex;
  std::vector<Played> played;
  std::atomic<int> delivered{0};
  auto onFrame = [&](rs2::frame f) {
    if (f.get_profile().stream_type() == RS2_STREAM_INFRARED) return;  // compared: depth and colour
    auto v = f.as<rs2::video_frame>();
    Played p{f.get_profile().stream_type() == RS2_STREAM_DEPTH, std::llround(f.get_timestamp() * 1000.0),
             f.get_frame_timestamp_domain(), f.get_frame_number(), v ? v.get_stride_in_bytes() : 0, {}};
    if (v) {
      const auto* data = static_cast<const uint8_t*>(v.get_data());
      p.pixels.assign(data, data + static_cast<size_t>(v.get_stride_in_bytes()) * v.get_height());
    }
    std::lock_guard<std::mutex> lock(mutex);
    played.push_back(std::move(p));
    ++delivered;
  };

  std::vector<rs2::sensor> started;
  pb.pause();
  for (rs2::sensor& s : dev.query_sensors()) {
    s.open(s.get_stream_profiles());
    s.start(onFrame);
    started.push_back(s);
  }
  // Every sensor started: from the beginning again (see the top of this file).
  pb.seek(std::chrono::nanoseconds(0));
  pb.resume();
  bool first = waitUntil([&] { return delivered > 0; }, std::chrono::seconds(20));
  // At the end of the file the reading thread stops the sensors itself; stopping or closing them from here
  // at the same time races with it in 2.13 (a crash in playback_sensor::stop). So: wait for the end, let
  // the reading thread finish, and only stop what it did not.
  bool ended = first && waitUntil([&] { return pb.current_status() == RS2_PLAYBACK_STATUS_STOPPED; }, kDrainTimeout);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (rs2::sensor& s : started) {
    try {
      if (!ended) s.stop();
      s.close();
    } catch (const rs2::error&) {
      // already stopped and closed
    }
  }

  std::lock_guard<std::mutex> lock(mutex);
  StreamTally depthTally, colourTally;
  DepthAgreement agreement;
  std::set<std::pair<bool, int64_t>> seen;
  int repeats = 0;
  for (const Played& p : played) {
    if (!seen.insert({p.depth, p.us}).second) {
      ++repeats;  // delivered again after the seek back to 0
      continue;
    }
    auto it = byTimestamp.find(p.us);
    bool exact = false;
    if (it != byTimestamp.end()) {
      CameraFrame rec = loadFrame(index, it->second);
      if (p.depth) {
        std::vector<uint16_t> expected = streamedDepth(rec, it->second, o, g);
        exact = p.stride == g.width * 2 && p.pixels.size() == expected.size() * 2 &&
                std::memcmp(p.pixels.data(), expected.data(), p.pixels.size()) == 0;
        if (!o.separate && !rec.depth.empty() && p.pixels.size() == rec.depth.size() * 2) {
          const auto* got = reinterpret_cast<const uint16_t*>(p.pixels.data());
          for (size_t k = 0; k < rec.depth.size(); ++k) {
            double bagMm = got[k] * unitMm;
            if (got[k] && bagMm < kMinRangeMm) ++agreement.belowMinRange;
            if (!rec.depth[k]) continue;
            ++agreement.compared;
            if (!got[k]) {
              ++agreement.holes;
              continue;
            }
            double err = std::fabs(bagMm - rec.depth[k]);
            double tolerance = (o.stereo ? 4 * stereoSigmaMm(rec.depth[k], g.depth.fx) : 0) + unitMm / 2;
            if (err <= tolerance + 1e-9) ++agreement.within;
            agreement.maxError = std::max(agreement.maxError, err);
          }
        }
      } else {
        exact = p.stride == g.width * 3 && p.pixels == rec.rgb;
      }
    }
    StreamTally& t = p.depth ? depthTally : colourTally;
    ++t.frames;
    t.timestamps.insert(p.us);
    if (it != byTimestamp.end()) ++t.recordedTimestamps;
    if (p.domain == RS2_TIMESTAMP_DOMAIN_HARDWARE_CLOCK) ++t.hardwareClock;
    if (exact) ++t.exact;
    if (static_cast<long long>(p.number) <= t.lastNumber) t.numbersIncrease = false;
    t.lastNumber = static_cast<long long>(p.number);
  }
  char agree[300];
  std::snprintf(agree, sizeof agree, "{\"compared\":%lld,\"within_tolerance\":%lld,\"holes\":%lld,\"below_min_range\":%lld,\"max_error_mm\":%.3f}",
                agreement.compared, agreement.within, agreement.holes, agreement.belowMinRange, agreement.maxError);
  std::printf("{\"device\":%s,\"sensors\":[%s],\"depth_units\":%g,\"depth_sensor\":%s,\"baseline_mm\":%g,\"streams\":[%s],"
              "\"depth_to_colour_m\":%s,\"recorded\":{\"frames\":%zu,\"depth_frames\":%d},\"first_frame\":%s,\"ended\":%s,\"repeats\":%d,"
              "\"depth\":%s,\"colour\":%s,\"depth_vs_recording\":%s}\n",
              jsonString(dev.get_info(RS2_CAMERA_INFO_NAME)).c_str(), sensors.c_str(), depthUnits,
              depthSensorExtension ? "true" : "false", baseline, streams.c_str(), extrinsics.c_str(), index.frames.size(),
              recordedDepth, first ? "true" : "false", ended ? "true" : "false", repeats, tallyJson(depthTally, recordedDepthUs).c_str(),
              tallyJson(colourTally, recordedUs).c_str(), agree);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parseArgs(argc, argv);
  try {
    return o.verify ? verifyBag(o) : writeBag(o);
  } catch (const rs2::error& e) {
    std::fprintf(stderr, "bag_writer: librealsense: %s(%s): %s\n", e.get_failed_function().c_str(), e.get_failed_args().c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bag_writer: %s\n", e.what());
    return 1;
  }
}
