// Sphinx's search scorer (html_search_scorer in docs/conf.py): the default scores,
// and one change: a lab's solutions, for instructors, rank below the lab as
// students get it, so that a search does not show the two as equal hits.
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    return docname.startsWith("instructors/solutions/") ? score - 20 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
