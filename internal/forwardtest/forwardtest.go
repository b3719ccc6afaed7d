// Package forwardtest turns the oracle's golden rows into the rows the
// forward pass takes, for the tests of every package that runs the oracle
// through internal/forwardpass (root, backend/gpu, backend/cuda,
// backend/metalcuda). It is not part of oracletest because the tests of
// encoder and heads read the oracle too, and forwardpass imports both.
package forwardtest

import (
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/oracletest"
)

// Row is a golden row as the forward pass takes it.
func Row(r oracletest.Row) forwardpass.Row {
	return forwardpass.Row{IDs: r.InputIDs, Markers: r.Markers, QType: heads.QType(r.QType)}
}

// Rows is golden rows (a case's, in order) as the forward pass takes them.
func Rows(rows []oracletest.Row) []forwardpass.Row {
	out := make([]forwardpass.Row, len(rows))
	for i, r := range rows {
		out[i] = Row(r)
	}
	return out
}
