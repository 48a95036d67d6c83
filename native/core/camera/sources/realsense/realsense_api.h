// librealsense2's C API (rs.h), resolved at run time with dlopen: the addon has no link-time dependency on
// librealsense2, only its headers are needed to build, so one prebuilt addon serves boards with and without
// it. The C++ API (rs.hpp) is inline code over these same functions.
//
// Only functions that every release since 2.13 exports with the same signature are used (the list below);
// enum values used (stream, format, option, camera info, extension) are those that kept their numbers
// since 2.13. A library whose API major version differs from the headers' is refused by rs2_create_context
// itself.
#pragma once

#include <memory>
#include <string>

#include <librealsense2/rs.h>

#include "core/status.h"

namespace facecheck {

struct RealSenseApi {
  void* handle = nullptr;
  std::string path;  // what was loaded
  int version = 0;   // rs2_get_api_version: major*10000 + minor*100 + patch

#define FACE_CHECK_RS2_FUNCTIONS(X)                                                                       \
  X(rs2_get_api_version) X(rs2_get_error_message) X(rs2_get_failed_function) X(rs2_free_error)            \
  X(rs2_create_context) X(rs2_delete_context) X(rs2_query_devices) X(rs2_get_device_count)                \
  X(rs2_create_device) X(rs2_delete_device) X(rs2_delete_device_list) X(rs2_device_list_contains)         \
  X(rs2_get_device_info) X(rs2_supports_device_info) X(rs2_set_devices_changed_callback)                  \
  X(rs2_context_add_device) X(rs2_context_remove_device) X(rs2_create_record_device)                      \
  X(rs2_playback_device_set_real_time) X(rs2_playback_device_get_current_status)                          \
  X(rs2_playback_device_pause) X(rs2_playback_device_resume) X(rs2_playback_seek)                          \
  X(rs2_query_sensors) X(rs2_get_sensors_count) X(rs2_create_sensor) X(rs2_delete_sensor)                 \
  X(rs2_delete_sensor_list) X(rs2_get_sensor_info) X(rs2_supports_sensor_info)                            \
  X(rs2_supports_option) X(rs2_get_option) X(rs2_set_option) X(rs2_is_option_read_only)                   \
  X(rs2_get_stream_profiles) X(rs2_get_stream_profiles_count) X(rs2_get_stream_profile)                   \
  X(rs2_delete_stream_profiles_list) X(rs2_get_stream_profile_data) X(rs2_get_video_stream_resolution)    \
  X(rs2_get_video_stream_intrinsics) X(rs2_get_extrinsics) X(rs2_open_multiple) X(rs2_close)              \
  X(rs2_start) X(rs2_stop) X(rs2_get_frame_data) X(rs2_get_frame_width) X(rs2_get_frame_height)           \
  X(rs2_get_frame_stride_in_bytes) X(rs2_get_frame_timestamp) X(rs2_get_frame_timestamp_domain)           \
  X(rs2_get_frame_number) X(rs2_get_frame_stream_profile) X(rs2_release_frame) X(rs2_frame_add_ref)      \
  X(rs2_is_frame_extendable_to) X(rs2_embedded_frames_count) X(rs2_extract_frame)                         \
  X(rs2_create_align) X(rs2_create_processing_block_fptr) X(rs2_allocate_composite_frame) X(rs2_synthetic_frame_ready)                    \
  X(rs2_start_processing_queue) X(rs2_process_frame) X(rs2_delete_processing_block)                       \
  X(rs2_create_frame_queue) X(rs2_delete_frame_queue) X(rs2_poll_for_frame)
#define FACE_CHECK_RS2_MEMBER(name) decltype(&::name) name = nullptr;
  FACE_CHECK_RS2_FUNCTIONS(FACE_CHECK_RS2_MEMBER)
#undef FACE_CHECK_RS2_MEMBER

  ~RealSenseApi();
};

// The library's words for a failed call ("rs2_open_multiple: <message>"); frees the error.
std::string takeRealSenseError(const RealSenseApi& api, rs2_error* error);

// Loads `library`: a dlopen name or path, or "auto": librealsense2.so (a -dev package's link), else the
// newest librealsense2.so.2.<minor> in the system's library folders (Intel's packages name the file by
// minor version), else librealsense2.so.2. Never unloaded (librealsense keeps threads and static state).
Result loadRealSense(const std::string& library, std::shared_ptr<RealSenseApi>* out);

// Whether `library` loads and has the functions above; says which file and version it found.
bool realSenseLoadable(const std::string& library, std::string* detail);

}  // namespace facecheck
