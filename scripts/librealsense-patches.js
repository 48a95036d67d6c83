'use strict';
// Fixes applied to librealsense 2.13's source before scripts/build-librealsense.js builds it: each a
// backport of what current librealsense releases do (the realsense source targets those), as an exact
// text edit that must match once (a different source fails the build instead of building something else).
module.exports = [
  {
    file: 'src/software-device.cpp',
    why: 'software_device never put its streams in an extrinsics group, so rs2::recorder failed to look up ' +
      '(map::at) and wrote no depth-to-colour extrinsics into the .bag; current releases register each ' +
      'software stream with the device (software_device::register_extrinsic)',
    find: '        _profiles.push_back(profile);\n\n        return profile;',
    replace: '        _profiles.push_back(profile);\n        static_cast<software_device*>(_owner)->register_extrinsic(*profile);\n\n        return profile;',
  },
  {
    file: 'src/software-device.h',
    why: 'the declaration the edit above calls',
    find: '        std::shared_ptr<matcher> create_matcher(const frame_holder& frame) const override;\n',
    replace: '        std::shared_ptr<matcher> create_matcher(const frame_holder& frame) const override;\n\n' +
      '        void register_extrinsic(const stream_interface& stream) { register_stream_to_extrinsic_group(stream, 0); }\n',
  },
];
