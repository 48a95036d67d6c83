// Software renderer of the synthetic depth camera: textured triangle meshes rasterised with a z-buffer
// through a pinhole camera, then a colour and depth sensor model (exposure, blur and noise; depth noise
// growing with distance, Kinect disparity quantisation, projector shadows, edge and random holes).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/camera/camera.h"
#include "core/face/similarity_transform.h"

namespace facecheck::synth {

struct Vec3 {
  double x = 0, y = 0, z = 0;
};
inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec3 operator*(Vec3 a, double s) { return {a.x * s, a.y * s, a.z * s}; }
inline double dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
inline Vec3 normalized(Vec3 a) {
  double n = std::sqrt(dot(a, a));
  return n > 0 ? a * (1 / n) : a;
}

// Rotation matrix (row-major) from yaw (about Y), pitch (about X) and roll (about Z), degrees.
struct Mat3 {
  double m[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  Vec3 operator*(Vec3 v) const {
    return {m[0] * v.x + m[1] * v.y + m[2] * v.z, m[3] * v.x + m[4] * v.y + m[5] * v.z,
            m[6] * v.x + m[7] * v.y + m[8] * v.z};
  }
  static Mat3 rotation(double yawDeg, double pitchDeg, double rollDeg);
};

// Small fast PRNG (xoshiro128+ style) with uniform and approximately normal draws.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint32_t next();
  double uniform() { return (next() >> 8) * (1.0 / 16777216.0); }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  double normal();  // sum of uniforms, variance 1
  bool chance(double p) { return uniform() < p; }

 private:
  uint32_t s_[4];
};

uint64_t mixSeed(uint64_t a, uint64_t b);

struct Texture {
  std::vector<uint8_t> rgb;
  int width = 0, height = 0;
  // Bilinear sample at pixel-centre coordinates; outside the image: `border` (or clamped when null).
  void sample(double u, double v, const uint8_t* border, float out[3]) const;
};

// A rectangle of a texture's pixels replaced (the closed eyes of a face photo): a variant of the texture
// that holds only what differs from it instead of a whole copy.
struct TexturePatch {
  Texture pixels;
  int x = 0, y = 0;  // where pixels' top-left corner lies in the patched texture
  bool covers(int px, int py) const { return px >= x && py >= y && px < x + pixels.width && py < y + pixels.height; }
};

// The same bilinear sample as Texture::sample of `base` with `patch` applied (each of the four pixels read
// from the patch where it covers them).
void samplePatched(const Texture& base, const TexturePatch& patch, double u, double v, const uint8_t* border,
                   float out[3]);

enum class Material : uint8_t { None = 0, Wall, Skin, Paper, Screen, Body };

struct Vertex {
  Vec3 p;          // camera coordinates, mm (Z forward)
  double u = 0, v = 0;  // texture coordinates, pixels
  float shade = 1;
};

struct Mesh {
  std::vector<Vertex> vertices;
  std::vector<int> triangles;  // 3 indices each
  const Texture* texture = nullptr;
  const TexturePatch* patch = nullptr;  // drawn over texture when set (closed eyes)
  Material material = Material::Wall;
  uint8_t border[3] = {0, 0, 0};  // colour outside the texture
  bool clampTexture = false;
  // Optional per-fragment hole test in texture coordinates (cut-out eye holes).
  std::function<bool(double u, double v)> hole;
  // Colour transform: out = gain * c + offset, per channel (print ink, screen backlight).
  float gain[3] = {1, 1, 1};
  float offset[3] = {0, 0, 0};
  // Screen moire: amplitude and spatial frequency in image pixels.
  float moire = 0, moireFx = 0, moireFy = 0;
};

struct RenderBuffers {
  int width = 0, height = 0;
  std::vector<float> z;          // mm, 0 = empty
  std::vector<float> colour;     // RGB floats 0..255
  std::vector<Material> material;
  void reset(int w, int h);
};

void rasterise(const Mesh& mesh, const CameraIntrinsics& k, RenderBuffers* buffers);

struct SensorParams {
  float exposure = 1;             // colour gain
  float whiteBalance[3] = {1, 1, 1};
  float colourNoise = 2.5f;       // sigma, grey levels
  float depthNoiseScale = 1;      // multiplies the distance-dependent sigma
  float dropout = 0.004f;         // random missing depth pixels
  float screenHoleFraction = 0;   // share of screen pixels without depth (glossy glass)
  double screenHoleCx = 0, screenHoleCy = 0, screenHoleR = 0;  // image-space specular blob
  double glareX = -1, glareY = -1, glareR = 0, glareGain = 0;  // colour specular highlight on screens
  bool infrared = false;          // also render the active-infrared image (a stereo camera's projector-lit view)
};

// Turns rendered buffers into a camera frame (rgb + depth in mm, and the infrared image when asked) with
// the sensor model.
void applySensor(const RenderBuffers& buffers, const CameraIntrinsics& k, const SensorParams& params, Rng& rng,
                 CameraFrame* frame);

}  // namespace facecheck::synth
