//go:build !amd64 || purego

package blockhash

const haveSixteen, haveEight = false, false

const minLanesEight = 0

func sumSixteen([][]byte, []int, *[Lanes][32]byte) { panic("blockhash: no kernels") }

func sumBlocks([][]byte, []int, *[Lanes][32]byte) { panic("blockhash: no kernels") }

func sumLong([][]byte, []int, [][32]byte) { panic("blockhash: no kernels") }
