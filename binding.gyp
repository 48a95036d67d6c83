# Secondary build (node-gyp), used when neither a prebuild nor cmake-js is available.
# Reads the same source list and compiler flags as CMakeLists.txt: native/sources.json and
# native/build-flags.json.
{
  "variables": {
    "ort_include%": "deps/onnxruntime/include",
  },
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
    "cflags_cc": ["<!@(node -p \"const f=require('./native/build-flags.json'); f.cxx.concat(f.addon).join(' ')\")"],
    "include_dirs": ["native", "<(ort_include)", "<!(node -p \"require('node-addon-api').include_dir\")"],
    "defines": ["<!@(node -p \"require('./native/build-flags.json').defines.join(' ')\")"]
  },
  "targets": [
    {
      "target_name": "face_check",
      "sources": [
        "<!@(node -p \"const s=require('./native/sources.json'); s.core.concat(s.addon).join(' ')\")"
      ],
      "ldflags": ["<!@(node -p \"require('./native/build-flags.json').link.join(' ')\")"],
      "libraries": ["<!@(node -p \"require('./native/build-flags.json').libs.join(' ')\")"],
      "conditions": [
        ["target_arch=='x64'", { "dependencies": ["simd_x64"] }],
        ["target_arch=='arm64'", { "sources": ["<!@(node -p \"require('./native/sources.json').simd_neon.join(' ')\")"] }],
        ["1==1", {
          "sources": ["<!@(node native/camera-sources.js sources)"],
          "defines": ["<!@(node native/camera-sources.js defines)"],
          "include_dirs": ["<!@(node native/camera-sources.js include_dirs)"]
        }]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "simd_x64",
          "type": "static_library",
          "dependencies": ["simd_avx2", "simd_avx512"],
          "sources": []
        },
        {
          "target_name": "simd_avx2",
          "type": "static_library",
          "cflags": ["<!@(node -p \"require('./native/build-flags.json').isa.avx2.join(' ')\")", "-fPIC"],
          "sources": ["<!@(node -p \"require('./native/sources.json').simd_avx2.join(' ')\")"]
        },
        {
          "target_name": "simd_avx512",
          "type": "static_library",
          "cflags": ["<!@(node -p \"require('./native/build-flags.json').isa.avx512.join(' ')\")", "-fPIC"],
          "sources": ["<!@(node -p \"require('./native/sources.json').simd_avx512.join(' ')\")"]
        }
      ]
    }]
  ]
}
