// A 16x16 input read through 33 slices, summed: one fused kernel.
func.func @main(%x: tensor<16x16xf32>) -> tensor<8x8xf32> {
  %s0 = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 8, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s1 = kiln.slice %x {start = array<i64: 1, 0>, stop = array<i64: 9, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s2 = kiln.slice %x {start = array<i64: 2, 0>, stop = array<i64: 10, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s3 = kiln.slice %x {start = array<i64: 3, 0>, stop = array<i64: 11, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s4 = kiln.slice %x {start = array<i64: 4, 0>, stop = array<i64: 12, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s5 = kiln.slice %x {start = array<i64: 5, 0>, stop = array<i64: 13, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s6 = kiln.slice %x {start = array<i64: 6, 0>, stop = array<i64: 14, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s7 = kiln.slice %x {start = array<i64: 7, 0>, stop = array<i64: 15, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s8 = kiln.slice %x {start = array<i64: 8, 0>, stop = array<i64: 16, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s9 = kiln.slice %x {start = array<i64: 0, 1>, stop = array<i64: 8, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s10 = kiln.slice %x {start = array<i64: 1, 1>, stop = array<i64: 9, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s11 = kiln.slice %x {start = array<i64: 2, 1>, stop = array<i64: 10, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s12 = kiln.slice %x {start = array<i64: 3, 1>, stop = array<i64: 11, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s13 = kiln.slice %x {start = array<i64: 4, 1>, stop = array<i64: 12, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s14 = kiln.slice %x {start = array<i64: 5, 1>, stop = array<i64: 13, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s15 = kiln.slice %x {start = array<i64: 6, 1>, stop = array<i64: 14, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s16 = kiln.slice %x {start = array<i64: 7, 1>, stop = array<i64: 15, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s17 = kiln.slice %x {start = array<i64: 8, 1>, stop = array<i64: 16, 9>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s18 = kiln.slice %x {start = array<i64: 0, 2>, stop = array<i64: 8, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s19 = kiln.slice %x {start = array<i64: 1, 2>, stop = array<i64: 9, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s20 = kiln.slice %x {start = array<i64: 2, 2>, stop = array<i64: 10, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s21 = kiln.slice %x {start = array<i64: 3, 2>, stop = array<i64: 11, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s22 = kiln.slice %x {start = array<i64: 4, 2>, stop = array<i64: 12, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s23 = kiln.slice %x {start = array<i64: 5, 2>, stop = array<i64: 13, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s24 = kiln.slice %x {start = array<i64: 6, 2>, stop = array<i64: 14, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s25 = kiln.slice %x {start = array<i64: 7, 2>, stop = array<i64: 15, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s26 = kiln.slice %x {start = array<i64: 8, 2>, stop = array<i64: 16, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s27 = kiln.slice %x {start = array<i64: 0, 3>, stop = array<i64: 8, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s28 = kiln.slice %x {start = array<i64: 1, 3>, stop = array<i64: 9, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s29 = kiln.slice %x {start = array<i64: 2, 3>, stop = array<i64: 10, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s30 = kiln.slice %x {start = array<i64: 3, 3>, stop = array<i64: 11, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s31 = kiln.slice %x {start = array<i64: 4, 3>, stop = array<i64: 12, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %s32 = kiln.slice %x {start = array<i64: 5, 3>, stop = array<i64: 13, 11>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %a1 = kiln.add %s0, %s1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a2 = kiln.add %a1, %s2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a3 = kiln.add %a2, %s3 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a4 = kiln.add %a3, %s4 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a5 = kiln.add %a4, %s5 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a6 = kiln.add %a5, %s6 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a7 = kiln.add %a6, %s7 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a8 = kiln.add %a7, %s8 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a9 = kiln.add %a8, %s9 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a10 = kiln.add %a9, %s10 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a11 = kiln.add %a10, %s11 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a12 = kiln.add %a11, %s12 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a13 = kiln.add %a12, %s13 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a14 = kiln.add %a13, %s14 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a15 = kiln.add %a14, %s15 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a16 = kiln.add %a15, %s16 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a17 = kiln.add %a16, %s17 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a18 = kiln.add %a17, %s18 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a19 = kiln.add %a18, %s19 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a20 = kiln.add %a19, %s20 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a21 = kiln.add %a20, %s21 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a22 = kiln.add %a21, %s22 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a23 = kiln.add %a22, %s23 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a24 = kiln.add %a23, %s24 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a25 = kiln.add %a24, %s25 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a26 = kiln.add %a25, %s26 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a27 = kiln.add %a26, %s27 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a28 = kiln.add %a27, %s28 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a29 = kiln.add %a28, %s29 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a30 = kiln.add %a29, %s30 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a31 = kiln.add %a30, %s31 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a32 = kiln.add %a31, %s32 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a32 : tensor<8x8xf32>
}
